//! The networks a block file can belong to: magic bytes, genesis, proof-of-work limit.

use std::fmt;

use crate::error::{ErrorKind, Result};
use crate::hash::BlockHash;
use crate::u256::U256;

/// A Bitcoin network, identified in block files by its 4-byte magic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Network {
    /// Mainnet, magic f9beb4d9.
    Main,
    /// Testnet3, magic 0b110907.
    Testnet3,
    /// Testnet4, magic 1c163f28.
    Testnet4,
    /// The default signet, magic 0a03cf40.
    Signet,
    /// Regression test network, magic fabfb5da.
    Regtest,
}

impl Network {
    /// Every network, in detection order.
    pub const ALL: [Network; 5] = [
        Network::Main,
        Network::Testnet3,
        Network::Testnet4,
        Network::Signet,
        Network::Regtest,
    ];

    /// The 4 bytes that start every record of this network's block files.
    pub fn magic(self) -> [u8; 4] {
        match self {
            Network::Main => [0xf9, 0xbe, 0xb4, 0xd9],
            Network::Testnet3 => [0x0b, 0x11, 0x09, 0x07],
            Network::Testnet4 => [0x1c, 0x16, 0x3f, 0x28],
            Network::Signet => [0x0a, 0x03, 0xcf, 0x40],
            Network::Regtest => [0xfa, 0xbf, 0xb5, 0xda],
        }
    }

    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Network::Main => "main",
            Network::Testnet3 => "testnet3",
            Network::Testnet4 => "testnet4",
            Network::Signet => "signet",
            Network::Regtest => "regtest",
        }
    }

    /// Parses a network name (`main`/`mainnet`, `testnet3`/`testnet`, `testnet4`, `signet`, `regtest`).
    pub fn from_name(name: &str) -> Result<Network> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "main" | "mainnet" | "bitcoin" => Network::Main,
            "test" | "testnet" | "testnet3" => Network::Testnet3,
            "testnet4" => Network::Testnet4,
            "signet" => Network::Signet,
            "regtest" => Network::Regtest,
            _ => {
                return Err(ErrorKind::UnknownNetwork {
                    name: name.to_string(),
                }
                .into());
            }
        })
    }

    /// The hash of the network's genesis block, where heights start.
    pub fn genesis(self) -> BlockHash {
        let hex = match self {
            Network::Main => "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f",
            Network::Testnet3 => "000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943",
            Network::Testnet4 => "00000000da84f2bafbbc53dee25a72ae507ff4914b867c565be350b0da8bf043",
            Network::Signet => "00000008819873e925422c1ff0f99f7cc9bbb232af63a077a480a3633bee1ef6",
            Network::Regtest => "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206",
        };
        BlockHash::from_hex(hex).expect("genesis hashes are valid hex")
    }

    /// The easiest target a header may claim (Core's `powLimit`).
    pub fn pow_limit(self) -> U256 {
        match self {
            Network::Main | Network::Testnet3 | Network::Testnet4 => {
                U256::ONE.shift_left(224).overflowing_sub(U256::ONE).0
            }
            Network::Signet => U256::from_u64(0x0377ae).shift_left(216),
            Network::Regtest => U256::ONE.shift_left(255).overflowing_sub(U256::ONE).0,
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
