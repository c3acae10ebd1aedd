//! The standard address of an output script, as Core's `ExtractDestination`
//! and `EncodeDestination` give it: P2PKH and P2SH in base58check, witness
//! programs in bech32 (version 0, BIP 173) or bech32m (versions 1 to 16,
//! BIP 350). Bare public keys (P2PK), bare multisig and every other script
//! have none.

use bech32::{Fe32, Hrp};

use crate::network::Network;

/// The address `script` pays to on `network`, or `None` when it has no
/// standard address (P2PK, bare multisig, a version-0 witness program of
/// another length than 20 or 32 bytes, anything else).
pub fn script_address(script: &[u8], network: Network) -> Option<String> {
    let main = network == Network::Main;
    match script {
        // OP_DUP OP_HASH160 <20> OP_EQUALVERIFY OP_CHECKSIG
        [0x76, 0xa9, 20, hash @ .., 0x88, 0xac] if hash.len() == 20 => {
            Some(base58check(if main { 0x00 } else { 0x6f }, hash))
        }
        // OP_HASH160 <20> OP_EQUAL
        [0xa9, 20, hash @ .., 0x87] if hash.len() == 20 => {
            Some(base58check(if main { 0x05 } else { 0xc4 }, hash))
        }
        _ => {
            let (version, program) = witness_program(script)?;
            if version == 0 && program.len() != 20 && program.len() != 32 {
                return None;
            }
            let hrp = match network {
                Network::Main => bech32::hrp::BC,
                Network::Testnet3 | Network::Testnet4 | Network::Signet => bech32::hrp::TB,
                Network::Regtest => bech32::hrp::BCRT,
            };
            segwit(hrp, version, program)
        }
    }
}

/// Core's `CScript::IsWitnessProgram`: a version opcode (`OP_0`, or `OP_1`
/// to `OP_16`) and one direct push of 2 to 40 bytes, nothing else.
fn witness_program(script: &[u8]) -> Option<(u8, &[u8])> {
    let [op, len, program @ ..] = script else {
        return None;
    };
    let version = match op {
        0x00 => 0,
        0x51..=0x60 => op - 0x50,
        _ => return None,
    };
    let fits = (2..=40).contains(len) && program.len() == *len as usize;
    fits.then_some((version, program))
}

fn base58check(version: u8, hash: &[u8]) -> String {
    let mut payload = [0u8; 21];
    payload[0] = version;
    payload[1..].copy_from_slice(hash);
    bs58::encode(payload).with_check().into_string()
}

/// Bech32 for version 0, bech32m after; `None` only where the library
/// refuses what [`witness_program`] let through (it never should).
fn segwit(hrp: Hrp, version: u8, program: &[u8]) -> Option<String> {
    let version = Fe32::try_from(version).ok()?;
    bech32::segwit::encode(hrp, version, program).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex::parse_hex;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn genesis_output_key_hash_is_satoshis_address() {
        // The genesis coinbase pays a bare public key; its hash160 as a
        // P2PKH is the address everyone knows.
        let hash: [u8; 20] = parse_hex("62e907b15cbf27d5425399ebf6f0fb50ebb88f18").unwrap();
        let mut script = vec![0x76, 0xa9, 20];
        script.extend_from_slice(&hash);
        script.extend_from_slice(&[0x88, 0xac]);
        assert_eq!(
            script_address(&script, Network::Main).as_deref(),
            Some("1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa")
        );
        // The same hash on the test networks: version byte 0x6f.
        assert_eq!(
            script_address(&script, Network::Testnet3).as_deref(),
            Some("mpXwg4jMtRhuSpVq4xS3HFHmCmWp9NyGKt")
        );
    }

    #[test]
    fn p2sh_addresses() {
        // Core's base58 vectors (base58_keys_valid.json): a mainnet P2SH;
        // the same hash on the test networks (version byte 0xc4).
        let script = hex("a9145ece0cadddc415b1980f001785947120acdb36fc87");
        assert_eq!(
            script_address(&script, Network::Main).as_deref(),
            Some("3ALJH9Y951VCGcVZYAdpA3KchoP9McEj1G")
        );
        assert_eq!(
            script_address(&script, Network::Regtest).as_deref(),
            Some("2N1tWLtUAgTzYUQ87DJFgmzJsv9bK9RSyV9")
        );
    }

    #[test]
    fn bip173_and_bip350_vectors() {
        // BIP 173's valid segwit addresses, and BIP 350's (bech32m for
        // versions 1 and up), with their scriptPubKeys.
        let vectors = [
            (
                Network::Main,
                "0014751e76e8199196d454941c45d1b3a323f1433bd6",
                "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
            ),
            (
                Network::Testnet3,
                "00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262",
                "tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7",
            ),
            (
                Network::Testnet3,
                "0020000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433",
                "tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy",
            ),
            (
                Network::Main,
                "5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6",
                "bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y",
            ),
            (Network::Main, "6002751e", "bc1sw50qgdz25j"),
            (
                Network::Main,
                "5210751e76e8199196d454941c45d1b3a323",
                "bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs",
            ),
            (
                Network::Testnet3,
                "5120000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433",
                "tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c",
            ),
            (
                Network::Main,
                "512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798",
                "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
            ),
        ];
        for (network, script, address) in vectors {
            assert_eq!(
                script_address(&hex(script), network).as_deref(),
                Some(address),
                "{script}"
            );
        }
        // Regtest's prefix.
        assert_eq!(
            script_address(
                &hex("0014751e76e8199196d454941c45d1b3a323f1433bd6"),
                Network::Regtest
            )
            .as_deref(),
            Some("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080")
        );
        // Signet and testnet4 share testnet's.
        for network in [Network::Signet, Network::Testnet4] {
            assert!(
                script_address(
                    &hex("0014751e76e8199196d454941c45d1b3a323f1433bd6"),
                    network
                )
                .unwrap()
                .starts_with("tb1q")
            );
        }
    }

    #[test]
    fn scripts_without_an_address() {
        let none = [
            // P2PK (the genesis output's shape), compressed and not.
            format!("41{}ac", "04".repeat(65)),
            format!("21{}ac", "02".repeat(33)),
            // 1-of-2 bare multisig.
            format!("5121{}21{}52ae", "02".repeat(33), "03".repeat(33)),
            // A version-0 program of 21 bytes, one of 1 byte, 41 bytes.
            format!("0015{}", "00".repeat(21)),
            format!("5101{}", "00"),
            format!("5129{}", "00".repeat(41)),
            // A witness program with a byte after it; a push not direct.
            format!("0014{}00", "00".repeat(20)),
            format!("004c14{}", "00".repeat(20)),
            // P2PKH and P2SH shapes one byte short or long.
            format!("76a914{}88ac", "00".repeat(19)),
            format!("a914{}0087", "00".repeat(20)),
            String::new(),
            "51".to_string(),
            "6a0401020304".to_string(),
        ];
        for script in none {
            for network in Network::ALL {
                assert_eq!(script_address(&hex(&script), network), None, "{script}");
            }
        }
    }
}
