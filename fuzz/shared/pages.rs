//! What the pwned fuzz targets that build an index around arbitrary bytes
//! share: the bytes laid out as whole pages and their directory.

/// An index page's size.
pub const PAGE: usize = 4096;

/// `body` cut into as many whole pages as it holds, each followed in
/// `body` by its 12-byte directory entry: a file of a zeroed header block,
/// the pages and the directory (each entry given its page's right CRC-32C,
/// so that the pages get decoded), the directory again on its own, and the
/// number of pages.
pub fn pages_and_directory(body: &[u8]) -> (Vec<u8>, Vec<u8>, usize) {
    let pages = body.len() / (PAGE + 12);
    let mut file = vec![0u8; PAGE];
    file.extend_from_slice(&body[..pages * (PAGE + 12)]);
    let mut dir = file[PAGE * (1 + pages)..].to_vec();
    for i in 0..pages {
        let crc = crc32c::crc32c(&file[PAGE * (1 + i)..PAGE * (2 + i)]);
        dir[12 * i + 8..12 * i + 12].copy_from_slice(&crc.to_le_bytes());
    }
    file.truncate(PAGE * (1 + pages));
    file.extend_from_slice(&dir);
    (file, dir, pages)
}
