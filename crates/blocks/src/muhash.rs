//! MuHash3072, the hash of a set that Core's `gettxoutsetinfo` reports as
//! `muhash` (`crypto/muhash.cpp`, `kernel/coinstats.cpp`): each element is
//! hashed to a number modulo the prime 2^3072 - 1103717 and the set's hash
//! is their product, so it does not depend on the order of insertion and an
//! element can be taken out again (divided out).
//!
//! An element `data` becomes the 384 bytes of ChaCha20's keystream under the
//! key SHA-256(`data`), nonce 0, counter 0, read as a little-endian number.
//! Inserting multiplies the numerator, removing the denominator; the final
//! hash is SHA-256 of numerator / denominator, fully reduced, as 384
//! little-endian bytes. A coin's element is [`coin_bytes`] (Core's
//! `TxOutSer`).

use chacha20::ChaCha20;
use chacha20::cipher::{KeyIvInit, StreamCipher};
use sha2::{Digest, Sha256};

use crate::coin::{Coin, OutPoint};

const LIMBS: usize = 48;
const BYTES: usize = LIMBS * 8;

/// 2^3072 - the prime: 2^3072 ≡ this, modulo the prime.
const C: u64 = 1_103_717;

/// A number below 2^3072, taken modulo 2^3072 - C (not always fully
/// reduced: a value from the prime up to 2^3072 - 1 is reduced at the end).
#[derive(Clone, PartialEq, Eq)]
struct Num3072([u64; LIMBS]);

impl Num3072 {
    fn one() -> Num3072 {
        let mut limbs = [0u64; LIMBS];
        limbs[0] = 1;
        Num3072(limbs)
    }

    fn from_le_bytes(bytes: &[u8]) -> Num3072 {
        let mut limbs = [0u64; LIMBS];
        for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            *limb = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        Num3072(limbs)
    }

    fn write_le_bytes(&self, out: &mut [u8]) {
        for (limb, chunk) in self.0.iter().zip(out.chunks_exact_mut(8)) {
            chunk.copy_from_slice(&limb.to_le_bytes());
        }
    }

    fn is_one(&self) -> bool {
        self.0[0] == 1 && self.0[1..].iter().all(|&limb| limb == 0)
    }

    /// Whether the value is at least the prime (so not fully reduced).
    fn is_overflow(&self) -> bool {
        self.0[0] > u64::MAX - C && self.0[1..].iter().all(|&limb| limb == u64::MAX)
    }

    /// From [prime, 2^3072) to [0, C): subtracting the prime is adding C
    /// and dropping 2^3072.
    fn full_reduce(&mut self) {
        if self.is_overflow() {
            let mut carry = C;
            for limb in self.0.iter_mut() {
                let (sum, overflow) = limb.overflowing_add(carry);
                *limb = sum;
                carry = overflow as u64;
            }
        }
    }

    /// `self * other` modulo the prime (result below 2^3072).
    fn mul(&mut self, other: &Num3072) {
        let mut wide = [0u64; 2 * LIMBS];
        mul_wide(&self.0, &other.0, &mut wide);
        // high * 2^3072 + low ≡ high * C + low.
        let mut carry = 0u128;
        for i in 0..LIMBS {
            let t = wide[i] as u128 + wide[i + LIMBS] as u128 * C as u128 + carry;
            self.0[i] = t as u64;
            carry = t >> 64;
        }
        // What overflowed 2^3072 (below 2^21) is worth `carry * C`; adding
        // it may overflow again, by 1 at most, once.
        while carry != 0 {
            let mut add = carry * C as u128;
            for limb in self.0.iter_mut() {
                if add == 0 {
                    break;
                }
                let t = *limb as u128 + add;
                *limb = t as u64;
                add = t >> 64;
            }
            carry = add;
        }
    }

    /// The inverse modulo the prime (Fermat: `self`^(prime - 2)), with a
    /// fixed 4-bit window; `self` must not be 0 modulo the prime.
    fn inverse(&self) -> Num3072 {
        let mut table = vec![Num3072::one(), self.clone()];
        for i in 2..16 {
            let mut next = table[i - 1].clone();
            next.mul(self);
            table.push(next);
        }
        // prime - 2 = 2^3072 - C - 2: every limb all ones but the lowest.
        let mut exponent = [u64::MAX; LIMBS];
        exponent[0] = u64::MAX - C - 1;
        let mut acc = Num3072::one();
        for limb in exponent.iter().rev() {
            for nibble in (0..16).rev() {
                for _ in 0..4 {
                    let copy = acc.clone();
                    acc.mul(&copy);
                }
                acc.mul(&table[(limb >> (4 * nibble) & 0xf) as usize]);
            }
        }
        acc
    }
}

/// The limbs below which [`mul_wide`] multiplies column by column.
const BASE_LIMBS: usize = 12;

/// `a * b` into `out` (twice their length): Karatsuba's three half-size
/// products while the halves are above [`BASE_LIMBS`] (48 limbs: 9 products
/// of 12 limbs, 1,296 limb products instead of 2,304), with the
/// differences' absolute values so that nothing carries into a middle limb.
fn mul_wide(a: &[u64], b: &[u64], out: &mut [u64]) {
    let n = a.len();
    if n <= BASE_LIMBS {
        let (a, b) = (a.try_into().expect("base"), b.try_into().expect("base"));
        comba::<BASE_LIMBS>(a, b, out);
        return;
    }
    let h = n / 2;
    let (a0, a1) = a.split_at(h);
    let (b0, b1) = b.split_at(h);
    {
        let (low, high) = out.split_at_mut(n);
        mul_wide(a0, b0, low);
        mul_wide(a1, b1, high);
    }
    // a0*b1 + a1*b0 = a0*b0 + a1*b1 + (a0 - a1) * (b1 - b0).
    let (mut da, mut db) = ([0u64; LIMBS / 2], [0u64; LIMBS / 2]);
    let negative = abs_diff(a0, a1, &mut da[..h]) != abs_diff(b1, b0, &mut db[..h]);
    let mut product = [0u64; LIMBS];
    mul_wide(&da[..h], &db[..h], &mut product[..n]);
    let mut middle = [0u64; LIMBS + 1];
    middle[..n].copy_from_slice(&out[..n]);
    add_into(&mut middle[..=n], &out[n..2 * n]);
    if negative {
        sub_from(&mut middle[..=n], &product[..n]);
    } else {
        add_into(&mut middle[..=n], &product[..n]);
    }
    add_into(&mut out[h..], &middle[..=n]);
}

/// `a * b` into `out[..2N]`, row by row, in a local array the compiler
/// keeps unrolled (`N` is a constant).
fn comba<const N: usize>(a: &[u64; N], b: &[u64; N], out: &mut [u64]) {
    let mut wide = [[0u64; N]; 2];
    for i in 0..N {
        let ai = a[i] as u128;
        let mut carry = 0u64;
        for (j, &bj) in b.iter().enumerate() {
            let k = i + j;
            let slot = &mut wide[k / N][k % N];
            let t = ai * bj as u128 + *slot as u128 + carry as u128;
            *slot = t as u64;
            carry = (t >> 64) as u64;
        }
        wide[1][i] = carry;
    }
    out[..N].copy_from_slice(&wide[0]);
    out[N..2 * N].copy_from_slice(&wide[1]);
}

/// |x - y| into `out`; true when y > x.
fn abs_diff(x: &[u64], y: &[u64], out: &mut [u64]) -> bool {
    let swap = x.iter().rev().cmp(y.iter().rev()).is_lt();
    let (big, small) = if swap { (y, x) } else { (x, y) };
    let mut borrow = false;
    for ((o, &p), &q) in out.iter_mut().zip(big).zip(small) {
        let (d, b1) = p.overflowing_sub(q);
        let (d, b2) = d.overflowing_sub(borrow as u64);
        *o = d;
        borrow = b1 || b2;
    }
    swap
}

/// `out += x`, the carry run through the rest of `out` (which the callers
/// size so that nothing carries out of it).
fn add_into(out: &mut [u64], x: &[u64]) {
    let mut carry = false;
    for (i, limb) in out.iter_mut().enumerate() {
        let add = x.get(i).copied().unwrap_or(0);
        if add == 0 && !carry && i >= x.len() {
            break;
        }
        let (s, c1) = limb.overflowing_add(add);
        let (s, c2) = s.overflowing_add(carry as u64);
        *limb = s;
        carry = c1 || c2;
    }
}

/// `out -= x` (never below zero at the callers).
fn sub_from(out: &mut [u64], x: &[u64]) {
    let mut borrow = false;
    for (i, limb) in out.iter_mut().enumerate() {
        let sub = x.get(i).copied().unwrap_or(0);
        if sub == 0 && !borrow && i >= x.len() {
            break;
        }
        let (d, b1) = limb.overflowing_sub(sub);
        let (d, b2) = d.overflowing_sub(borrow as u64);
        *limb = d;
        borrow = b1 || b2;
    }
}

/// The number an element's bytes hash to.
fn element(key: [u8; 32]) -> Num3072 {
    let mut stream = [0u8; BYTES];
    let mut cipher = ChaCha20::new(&key.into(), &[0u8; 12].into());
    cipher.apply_keystream(&mut stream);
    Num3072::from_le_bytes(&stream)
}

/// Core's `MuHash3072`: the hash of a multiset of byte strings.
#[derive(Clone, PartialEq, Eq)]
pub struct MuHash3072 {
    numerator: Num3072,
    denominator: Num3072,
}

impl Default for MuHash3072 {
    fn default() -> Self {
        MuHash3072::new()
    }
}

impl std::fmt::Debug for MuHash3072 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hash = self.finalize();
        write!(f, "MuHash3072({})", crate::hex::to_hex(&hash))
    }
}

/// The length of [`MuHash3072::to_bytes`].
pub const MUHASH_STATE_LEN: usize = 2 * BYTES;

impl MuHash3072 {
    /// The hash of the empty set.
    pub fn new() -> MuHash3072 {
        MuHash3072 {
            numerator: Num3072::one(),
            denominator: Num3072::one(),
        }
    }

    /// Adds `data` to the set.
    pub fn insert(&mut self, data: &[u8]) {
        self.numerator.mul(&element(Sha256::digest(data).into()));
    }

    /// Takes `data` out of the set (it need not have been inserted: the
    /// hash is of a multiset with negative counts allowed).
    pub fn remove(&mut self, data: &[u8]) {
        self.denominator.mul(&element(Sha256::digest(data).into()));
    }

    /// Adds a coin, as `gettxoutsetinfo` hashes it ([`coin_bytes`]), with
    /// no allocation.
    pub fn insert_coin(&mut self, outpoint: &OutPoint, coin: &Coin) {
        self.numerator.mul(&element(coin_hash(outpoint, coin)));
    }

    /// Takes a coin out (a spent output).
    pub fn remove_coin(&mut self, outpoint: &OutPoint, coin: &Coin) {
        self.denominator.mul(&element(coin_hash(outpoint, coin)));
    }

    /// Adds every element of `other` (and takes out what it took out): the
    /// hash of the union, as Core's `operator*=`.
    pub fn combine(&mut self, other: &MuHash3072) {
        self.numerator.mul(&other.numerator);
        self.denominator.mul(&other.denominator);
    }

    /// The set's 32-byte hash, in the byte order SHA-256 produces. Core
    /// shows it reversed, as a uint256 (`gettxoutsetinfo`'s `muhash`).
    /// Costs an inversion (a few milliseconds) when anything was removed.
    pub fn finalize(&self) -> [u8; 32] {
        let mut value = self.numerator.clone();
        value.full_reduce();
        if !self.denominator.is_one() {
            let mut denominator = self.denominator.clone();
            denominator.full_reduce();
            value.mul(&denominator.inverse());
            value.full_reduce();
        }
        let mut bytes = [0u8; BYTES];
        value.write_le_bytes(&mut bytes);
        Sha256::digest(bytes).into()
    }

    /// The state as Core serializes a `MuHash3072` (numerator, then
    /// denominator, each 384 bytes little-endian), to carry it between
    /// runs.
    pub fn to_bytes(&self) -> [u8; MUHASH_STATE_LEN] {
        let mut out = [0u8; MUHASH_STATE_LEN];
        self.numerator.write_le_bytes(&mut out[..BYTES]);
        self.denominator.write_le_bytes(&mut out[BYTES..]);
        out
    }

    /// The state [`MuHash3072::to_bytes`] wrote (any 768 bytes are a state).
    pub fn from_bytes(bytes: &[u8; MUHASH_STATE_LEN]) -> MuHash3072 {
        MuHash3072 {
            numerator: Num3072::from_le_bytes(&bytes[..BYTES]),
            denominator: Num3072::from_le_bytes(&bytes[BYTES..]),
        }
    }
}

/// Appends the bytes `gettxoutsetinfo`'s MuHash hashes for a coin (Core's
/// `TxOutSer`): the txid (32 bytes), the output index (u32 LE),
/// `height * 2 + coinbase` (u32 LE), the value (i64 LE), the script's
/// length (CompactSize) and the script.
pub fn coin_bytes(outpoint: &OutPoint, coin: &Coin, out: &mut Vec<u8>) {
    out.extend_from_slice(&outpoint.txid);
    out.extend_from_slice(&outpoint.vout.to_le_bytes());
    out.extend_from_slice(&coin.code().to_le_bytes());
    out.extend_from_slice(&coin.value.to_le_bytes());
    crate::tx::write_compact_size(out, coin.script.len() as u64);
    out.extend_from_slice(&coin.script);
}

/// SHA-256 of [`coin_bytes`], fed in parts.
fn coin_hash(outpoint: &OutPoint, coin: &Coin) -> [u8; 32] {
    let mut head = Vec::with_capacity(57);
    head.extend_from_slice(&outpoint.txid);
    head.extend_from_slice(&outpoint.vout.to_le_bytes());
    head.extend_from_slice(&coin.code().to_le_bytes());
    head.extend_from_slice(&coin.value.to_le_bytes());
    crate::tx::write_compact_size(&mut head, coin.script.len() as u64);
    let mut hasher = Sha256::new();
    hasher.update(&head);
    hasher.update(&coin.script);
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_int(i: u8) -> MuHash3072 {
        let mut hash = MuHash3072::new();
        let mut data = [0u8; 32];
        data[0] = i;
        hash.insert(&data);
        hash
    }

    /// Core shows uint256s reversed.
    fn reversed_hex(hash: [u8; 32]) -> String {
        let mut bytes = hash;
        bytes.reverse();
        crate::hex::to_hex(&bytes)
    }

    #[test]
    fn core_vectors() {
        // crypto_tests.cpp, muhash_tests: FromInt(0) * FromInt(1) / FromInt(2).
        let expected = "10d312b100cbd32ada024a6646e40d3482fcff103668d2625f10002a607d5863";
        let mut acc = from_int(0);
        acc.combine(&from_int(1));
        let mut two = MuHash3072::new();
        two.remove(&{
            let mut data = [0u8; 32];
            data[0] = 2;
            data
        });
        acc.combine(&two);
        assert_eq!(reversed_hex(acc.finalize()), expected);

        let mut acc2 = from_int(0);
        acc2.insert(&{
            let mut data = [0u8; 32];
            data[0] = 1;
            data
        });
        acc2.remove(&{
            let mut data = [0u8; 32];
            data[0] = 2;
            data
        });
        assert_eq!(reversed_hex(acc2.finalize()), expected);

        // The serialization of FromInt(1) * FromInt(2) starts with these
        // bytes (ser_exp) and ends with the denominator 1.
        let mut serchk = from_int(1);
        serchk.combine(&from_int(2));
        let bytes = serchk.to_bytes();
        let prefix = "1fa093295ea30a6a3acdc7b3f770fa538eff537528e990e2910e40bbcfd7f6696b1256901";
        assert!(crate::hex::to_hex(&bytes).starts_with(prefix));
        assert_eq!(MuHash3072::from_bytes(&bytes), serchk);
        assert_eq!(bytes[384], 1);
        assert!(bytes[385..].iter().all(|&b| b == 0));

        // Overflow: a numerator of 2^3072 - 1, above the prime, over 1; the
        // digest is not reversed in this check of Core's.
        let mut state = [0u8; MUHASH_STATE_LEN];
        state[..BYTES].fill(0xff);
        state[BYTES] = 1;
        let overflow = MuHash3072::from_bytes(&state);
        assert_eq!(
            crate::hex::to_hex(&overflow.finalize()),
            "3a31e6903aff0de9f62f9a9f7f8b861de76ce2cda09822b90014319ae5dc2271"
        );
    }

    /// Expected hashes from Core's Python `MuHash3072`
    /// (test_framework/crypto/muhash.py, run by hand on these coins'
    /// `TxOutSer` bytes), shown reversed as Core shows them.
    #[test]
    fn coins_match_core_python_framework() {
        let txid = |hex: &str| crate::hash::BlockHash::from_hex(hex).unwrap().0;
        let genesis_key = crate::hex::parse_hex::<65>(
            "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb6\
             49f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f",
        )
        .unwrap();
        let mut p2pkh = vec![0x76, 0xa9, 20];
        p2pkh.extend(0..20u8);
        p2pkh.extend_from_slice(&[0x88, 0xac]);
        let coins = [
            (
                "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b",
                0,
                0,
                true,
                5_000_000_000,
                [&[65][..], &genesis_key, &[0xac]].concat(),
            ),
            (
                "0e3e2357e806b6cdb1f70b54c3a3a17b6714ee1f0e68bebb44a74b1efd512098",
                0,
                1,
                true,
                5_000_000_000,
                p2pkh,
            ),
            (
                "00000000000000000000000000000000000000000000000000000000000000ff",
                7,
                800_000,
                false,
                1234,
                [&[0x00, 0x14][..], &[0x42; 20]].concat(),
            ),
        ]
        .map(|(id, vout, height, coinbase, value, script)| {
            let outpoint = OutPoint {
                txid: txid(id),
                vout,
            };
            let coin = Coin {
                value,
                height,
                coinbase,
                script,
            };
            (outpoint, coin)
        });
        let mut set = MuHash3072::new();
        assert_eq!(
            reversed_hex(set.finalize()),
            "dd5ad2a105c2d29495f577245c357409002329b9f4d6182c0af3dc2f462555c8"
        );
        for (outpoint, coin) in &coins {
            set.insert_coin(outpoint, coin);
        }
        assert_eq!(
            reversed_hex(set.finalize()),
            "dd451f295da4885c04df51fb80daae7605cabe9ed349bce15aba1abc8d107ed8"
        );
        set.remove_coin(&coins[1].0, &coins[1].1);
        assert_eq!(
            reversed_hex(set.finalize()),
            "da57d3bec4477aadfc304af46ca060845193770fb87965073bdab419f0047594"
        );
    }

    /// Row by row, the plain way, to hold Karatsuba's carries and borrows to.
    fn schoolbook(a: &[u64; LIMBS], b: &[u64; LIMBS]) -> [u64; 2 * LIMBS] {
        let mut wide = [0u64; 2 * LIMBS];
        for i in 0..LIMBS {
            let mut carry = 0u128;
            for j in 0..LIMBS {
                let t = a[i] as u128 * b[j] as u128 + wide[i + j] as u128 + carry;
                wide[i + j] = t as u64;
                carry = t >> 64;
            }
            wide[i + LIMBS] = carry as u64;
        }
        wide
    }

    #[test]
    fn karatsuba_matches_schoolbook() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let patterns: Vec<[u64; LIMBS]> = vec![
            [u64::MAX; LIMBS],
            [0; LIMBS],
            std::array::from_fn(|i| if i < LIMBS / 2 { u64::MAX } else { 0 }),
            std::array::from_fn(|i| if i < LIMBS / 2 { 0 } else { u64::MAX }),
            std::array::from_fn(|i| if i % 12 < 6 { u64::MAX } else { 1 }),
            std::array::from_fn(|_| next()),
            std::array::from_fn(|_| next()),
            std::array::from_fn(|_| next() >> 60),
        ];
        for a in &patterns {
            for b in &patterns {
                let mut wide = [0u64; 2 * LIMBS];
                mul_wide(a, b, &mut wide);
                assert_eq!(wide, schoolbook(a, b));
            }
        }
    }

    #[test]
    fn order_and_removal_do_not_matter() {
        let items: Vec<[u8; 3]> = (0..6u8).map(|i| [i, i * 3, 7]).collect();
        let mut forward = MuHash3072::new();
        for item in &items {
            forward.insert(item);
        }
        let mut backward = MuHash3072::new();
        for item in items.iter().rev() {
            backward.insert(item);
        }
        backward.insert(b"extra");
        backward.remove(b"extra");
        assert_eq!(forward.finalize(), backward.finalize());
        let mut emptied = forward.clone();
        for item in &items {
            emptied.remove(item);
        }
        assert_eq!(emptied.finalize(), MuHash3072::new().finalize());
        assert_ne!(forward.finalize(), MuHash3072::new().finalize());
    }

    #[test]
    fn coins_hash_their_tx_out_ser() {
        let outpoint = OutPoint {
            txid: [0xab; 32],
            vout: 3,
        };
        let coin = Coin {
            value: 5_000_000_000,
            height: 7,
            coinbase: true,
            script: vec![0x51; 300],
        };
        let mut bytes = Vec::new();
        coin_bytes(&outpoint, &coin, &mut bytes);
        assert_eq!(bytes.len(), 32 + 4 + 4 + 8 + 3 + 300);
        assert_eq!(&bytes[32..40], &[3, 0, 0, 0, 15, 0, 0, 0]);
        assert_eq!(&bytes[48..51], &[0xfd, 0x2c, 0x01]);
        let mut by_bytes = MuHash3072::new();
        by_bytes.insert(&bytes);
        let mut by_coin = MuHash3072::new();
        by_coin.insert_coin(&outpoint, &coin);
        assert_eq!(by_bytes, by_coin);
        by_coin.remove_coin(&outpoint, &coin);
        assert_eq!(by_coin.finalize(), MuHash3072::new().finalize());
    }
}
