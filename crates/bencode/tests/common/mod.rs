//! Test data shared by the integration tests.

/// One of libtorrent's torrents in `tests/data`, by name.
macro_rules! torrent {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!("../data/", $name, ".torrent")).as_slice(),
        )
    };
}

/// libtorrent's test and benchmark torrents, by name (see data/README.md).
pub fn torrents() -> Vec<(&'static str, &'static [u8])> {
    vec![
        torrent!("sample"),
        torrent!("base-v1"),
        torrent!("base-v2"),
        torrent!("many-pad-files"),
        torrent!("v2_hybrid"),
        torrent!("v2_multiple_files"),
    ]
}
