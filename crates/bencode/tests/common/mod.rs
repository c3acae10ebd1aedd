//! Test data shared by the integration tests.

/// libtorrent's test and benchmark torrents, by name (see data/README.md).
pub fn torrents() -> Vec<(&'static str, &'static [u8])> {
    vec![
        (
            "sample",
            include_bytes!("../data/sample.torrent").as_slice(),
        ),
        (
            "base-v1",
            include_bytes!("../data/base-v1.torrent").as_slice(),
        ),
        (
            "base-v2",
            include_bytes!("../data/base-v2.torrent").as_slice(),
        ),
        (
            "many-pad-files",
            include_bytes!("../data/many-pad-files.torrent").as_slice(),
        ),
        (
            "v2_hybrid",
            include_bytes!("../data/v2_hybrid.torrent").as_slice(),
        ),
        (
            "v2_multiple_files",
            include_bytes!("../data/v2_multiple_files.torrent").as_slice(),
        ),
    ]
}
