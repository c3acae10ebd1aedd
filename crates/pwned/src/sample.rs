//! The sample corpus built into the binary: Django's list of 19,640 common
//! passwords (see `data/README.md`). It holds no breach counts: a listed
//! password counts 1.

use crate::error::Result;
use crate::format::hash::Kind;
use crate::prepare::input::Input;
use crate::prepare::options::BuildOptions;
use crate::prepare::run::build_to_vec;
use crate::read::index::Index;

/// The passwords of the sample, one per line.
pub const PASSWORDS: &str = include_str!("../data/common-passwords.txt");

/// Where the sample comes from, for messages.
pub const DESCRIPTION: &str = "the built-in sample (19,640 common passwords from Django's \
     password validator; 1 = listed, 0 = not listed; these are not breach counts)";

/// Builds the sample as an in-memory SHA-1 index (a few milliseconds).
pub fn index() -> Result<Index> {
    let mut text = Vec::with_capacity(PASSWORDS.lines().count() * 43);
    for password in PASSWORDS.lines().filter(|l| !l.is_empty()) {
        Kind::Sha1
            .hash_password(password)
            .write_hex(Kind::Sha1, &mut text);
        text.push(b'\n');
    }
    let options = BuildOptions {
        threads: 1,
        ..BuildOptions::default()
    };
    let input = Input::Bytes {
        name: "sample".into(),
        data: text,
    };
    let (bytes, _) = build_to_vec(vec![input], &options)?;
    Index::from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_lists_common_passwords_only() {
        let index = index().unwrap();
        assert_eq!(index.len(), 19_640);
        for listed in ["123456", "password", "qwerty", "iloveyou"] {
            assert_eq!(index.count_password(listed).unwrap(), 1, "{listed}");
        }
        for unlisted in ["correct horse battery staple", "Tr0ub4dor&3-x9", ""] {
            assert_eq!(index.count_password(unlisted).unwrap(), 0, "{unlisted}");
        }
        index.verify().unwrap();
    }
}
