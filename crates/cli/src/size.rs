//! Sizes on the command line, read one way for every flag: a number with an
//! optional binary unit, `K`, `M`, `G` or `T` (also written `KB`/`KiB`, any
//! case): `262144`, `256K`, `256KiB`, `8G`.

/// Parses a size; the error names the text and the units.
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (a number, then K, M, G or T)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{text:?}: unknown unit (use K, M, G or T)")),
    };
    value
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// [`parse`], at least 1.
#[cfg(feature = "blocks")]
pub fn parse_positive(text: &str) -> Result<u64, String> {
    match parse(text)? {
        0 => Err(format!("{text:?}: must be at least 1")),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        for (text, want) in [
            ("0", 0),
            ("262144", 262_144),
            ("256K", 262_144),
            ("256k", 262_144),
            ("256KiB", 262_144),
            ("256 KB", 262_144),
            ("4M", 4 << 20),
            ("4MiB", 4 << 20),
            ("8G", 8 << 30),
            ("2T", 2 << 40),
            ("12b", 12),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "K",
            "1.5G",
            "-1",
            "4X",
            "4 M B",
            "99999999999999999999",
            "17179869184G",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("99999999999T").is_err());
        #[cfg(feature = "blocks")]
        {
            assert!(parse_positive("0").is_err());
            assert_eq!(parse_positive("1K"), Ok(1024));
        }
    }
}
