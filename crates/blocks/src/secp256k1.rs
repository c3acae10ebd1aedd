//! The little of secp256k1 that Core's script compression needs: whether a
//! 65-byte public key is a point of the curve (Core's `IsFullyValid`, which
//! decides whether a pay-to-pubkey script is compressed), and the y of an x
//! (to rebuild such a script from its 33 stored bytes).
//!
//! Field arithmetic modulo p = 2^256 - 2^32 - 977 on four 64-bit limbs,
//! least significant first. Nothing here is secret, so nothing needs to run
//! in constant time; it runs once per uncompressed pay-to-pubkey coin.

/// The field's prime p.
const P: [u64; 4] = [
    0xffff_fffe_ffff_fc2f,
    0xffff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
];

/// 2^256 mod p = 2^32 + 977.
const R: u64 = 0x1_0000_03d1;

/// (p + 1) / 4: p ≡ 3 (mod 4), so a square's root is its power by this.
const SQRT_EXP: [u64; 4] = [
    0xffff_ffff_bfff_ff0c,
    0xffff_ffff_ffff_ffff,
    0xffff_ffff_ffff_ffff,
    0x3fff_ffff_ffff_ffff,
];

/// An element of the field, always fully reduced (below p).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fe([u64; 4]);

impl Fe {
    const SEVEN: Fe = Fe([7, 0, 0, 0]);

    /// The element of 32 big-endian bytes, if they are below p.
    fn from_be_bytes(bytes: &[u8; 32]) -> Option<Fe> {
        let mut limbs = [0u64; 4];
        for (i, limb) in limbs.iter_mut().enumerate() {
            let at = 32 - 8 * (i + 1);
            *limb = u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        }
        (!at_least(&limbs, &P)).then_some(Fe(limbs))
    }

    fn to_be_bytes(self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, limb) in self.0.iter().enumerate() {
            let at = 32 - 8 * (i + 1);
            out[at..at + 8].copy_from_slice(&limb.to_be_bytes());
        }
        out
    }

    fn is_odd(self) -> bool {
        self.0[0] & 1 == 1
    }

    fn add(self, other: Fe) -> Fe {
        let mut sum = [0u64; 4];
        let mut carry = false;
        for (i, limb) in sum.iter_mut().enumerate() {
            let (a, c1) = self.0[i].overflowing_add(other.0[i]);
            let (b, c2) = a.overflowing_add(carry as u64);
            *limb = b;
            carry = c1 || c2;
        }
        // Both were below p, so the sum is below 2p: one subtraction at most.
        if carry || at_least(&sum, &P) {
            sum = wrapping_sub(&sum, &P);
        }
        Fe(sum)
    }

    fn negate(self) -> Fe {
        if self.0 == [0; 4] {
            self
        } else {
            Fe(wrapping_sub(&P, &self.0))
        }
    }

    fn mul(self, other: Fe) -> Fe {
        let mut wide = [0u64; 8];
        for i in 0..4 {
            let mut carry = 0u128;
            for j in 0..4 {
                let t = self.0[i] as u128 * other.0[j] as u128 + wide[i + j] as u128 + carry;
                wide[i + j] = t as u64;
                carry = t >> 64;
            }
            wide[i + 4] = carry as u64;
        }
        reduce(&wide)
    }

    fn square(self) -> Fe {
        self.mul(self)
    }

    /// `self` to the power `exp` (four limbs, least significant first).
    fn pow(self, exp: &[u64; 4]) -> Fe {
        let mut acc = Fe([1, 0, 0, 0]);
        for limb in exp.iter().rev() {
            for bit in (0..64).rev() {
                acc = acc.square();
                if limb >> bit & 1 == 1 {
                    acc = acc.mul(self);
                }
            }
        }
        acc
    }
}

/// A 512-bit product reduced modulo p, using 2^256 ≡ R.
fn reduce(wide: &[u64; 8]) -> Fe {
    let mut out = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let t = wide[i] as u128 + wide[i + 4] as u128 * R as u128 + carry;
        out[i] = t as u64;
        carry = t >> 64;
    }
    // What overflowed 2^256 (below 2^34) is worth `carry * R`; adding it
    // may overflow once more, by at most 1.
    while carry != 0 {
        let mut add = carry * R as u128;
        for limb in out.iter_mut() {
            let t = *limb as u128 + add;
            *limb = t as u64;
            add = t >> 64;
        }
        carry = add;
    }
    if at_least(&out, &P) {
        out = wrapping_sub(&out, &P);
    }
    Fe(out)
}

fn at_least(a: &[u64; 4], b: &[u64; 4]) -> bool {
    for i in (0..4).rev() {
        if a[i] != b[i] {
            return a[i] > b[i];
        }
    }
    true
}

fn wrapping_sub(a: &[u64; 4], b: &[u64; 4]) -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut borrow = false;
    for i in 0..4 {
        let (d, b1) = a[i].overflowing_sub(b[i]);
        let (d, b2) = d.overflowing_sub(borrow as u64);
        out[i] = d;
        borrow = b1 || b2;
    }
    out
}

/// x^3 + 7, the right side of the curve's equation y^2 = x^3 + 7.
fn curve_rhs(x: Fe) -> Fe {
    x.square().mul(x).add(Fe::SEVEN)
}

/// Whether `key` is a valid uncompressed public key: `04`, then x and y
/// below p with y^2 = x^3 + 7 (what Core's `CPubKey::IsFullyValid` accepts
/// for a 65-byte key starting with 04).
pub(crate) fn is_valid_uncompressed(key: &[u8; 65]) -> bool {
    if key[0] != 0x04 {
        return false;
    }
    let coordinate = |at: usize| Fe::from_be_bytes(key[at..at + 32].try_into().expect("32"));
    match (coordinate(1), coordinate(33)) {
        (Some(x), Some(y)) => y.square() == curve_rhs(x),
        _ => false,
    }
}

/// The uncompressed key (`04 x y`) of the point with this `x` whose y has
/// the given parity, if `x` is below p and on the curve.
pub(crate) fn decompress(x: &[u8; 32], odd: bool) -> Option<[u8; 65]> {
    let x_fe = Fe::from_be_bytes(x)?;
    let rhs = curve_rhs(x_fe);
    let mut y = rhs.pow(&SQRT_EXP);
    if y.square() != rhs {
        return None;
    }
    if y.is_odd() != odd {
        y = y.negate();
    }
    let mut key = [0u8; 65];
    key[0] = 0x04;
    key[1..33].copy_from_slice(x);
    key[33..].copy_from_slice(&y.to_be_bytes());
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<const N: usize>(hex: &str) -> [u8; N] {
        crate::hex::parse_hex::<N>(hex).unwrap()
    }

    /// The generator G, 2G and the key the genesis coinbase pays (a real
    /// pay-to-pubkey output), uncompressed.
    const KEYS: [&str; 3] = [
        "0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798\
         483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8",
        "04c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5\
         1ae168fea63dc339a3c58419466ceaeef7f632653266d0e1236431a950cfe52a",
        "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb6\
         49f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f",
    ];

    #[test]
    fn known_points_are_valid_and_decompress() {
        for hex in KEYS {
            let key: [u8; 65] = bytes(hex);
            assert!(is_valid_uncompressed(&key), "{hex}");
            let x: [u8; 32] = key[1..33].try_into().unwrap();
            let odd = key[64] & 1 == 1;
            assert_eq!(decompress(&x, odd), Some(key));
            // The other root is the negated y, and valid too.
            let other = decompress(&x, !odd).unwrap();
            assert_ne!(other, key);
            assert!(is_valid_uncompressed(&other));
        }
    }

    #[test]
    fn points_off_the_curve_are_refused() {
        let mut key: [u8; 65] = bytes(KEYS[2]);
        key[64] ^= 1;
        assert!(!is_valid_uncompressed(&key));
        key[64] ^= 1;
        key[0] = 0x06; // a hybrid key: not what Core compresses
        assert!(!is_valid_uncompressed(&key));
        // x = 5: 5^3 + 7 = 132 is not a square modulo p.
        let mut x = [0u8; 32];
        x[31] = 5;
        assert_eq!(decompress(&x, false), None);
        // x at or above p.
        assert_eq!(decompress(&Fe(P).to_be_bytes(), false), None);
        assert_eq!(decompress(&[0xff; 32], true), None);
    }

    #[test]
    fn field_arithmetic_edges() {
        let minus_one = Fe(wrapping_sub(&P, &[1, 0, 0, 0]));
        assert_eq!(minus_one.square(), Fe([1, 0, 0, 0]));
        assert_eq!(minus_one.add(Fe([1, 0, 0, 0])), Fe([0; 4]));
        assert_eq!(
            minus_one.add(minus_one),
            minus_one.negate().negate().add(minus_one)
        );
        assert_eq!(minus_one.negate(), Fe([1, 0, 0, 0]));
        // Fermat: a^(p-1) = 1.
        let a = Fe([0x1234_5678, 0x9abc, 0xdef0, 0x42]);
        let p_minus_1 = wrapping_sub(&P, &[1, 0, 0, 0]);
        assert_eq!(a.pow(&p_minus_1), Fe([1, 0, 0, 0]));
        assert_eq!(Fe::from_be_bytes(&minus_one.to_be_bytes()), Some(minus_one));
    }
}
