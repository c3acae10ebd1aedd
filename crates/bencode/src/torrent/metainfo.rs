//! Torrent metainfo: BEP 3 (v1), BEP 52 (v2) and hybrid torrents.

use std::collections::HashMap;

use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::Error;
use super::merkle::{self, BLOCK_SIZE, Hash32};
use crate::{Dict, Node};

/// Which hash trees a torrent carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// BEP 3: SHA-1 pieces over the concatenated files.
    V1,
    /// BEP 52: per-file SHA-256 merkle trees.
    V2,
    /// Both, describing the same files (v1 with pad files).
    Hybrid,
}

impl Version {
    /// `v1`, `v2` or `hybrid`.
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
            Version::Hybrid => "hybrid",
        }
    }

    /// Has v1 SHA-1 pieces.
    pub fn has_v1(self) -> bool {
        self != Version::V2
    }

    /// Has v2 merkle trees.
    pub fn has_v2(self) -> bool {
        self != Version::V1
    }
}

/// One file of a torrent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the download directory, one component each (for a
    /// multi-file torrent the first component is the torrent's name).
    pub path: Vec<String>,
    /// Size in bytes.
    pub length: u64,
    /// Offset of the file in the v1 piece stream (0 for v2-only torrents).
    pub offset: u64,
    /// A BEP 47 pad file (zeros, not stored on disk).
    pub pad: bool,
    /// v2: the root of the file's merkle tree (`None` for empty files).
    pub pieces_root: Option<Hash32>,
}

impl FileEntry {
    /// The path joined with `/`.
    pub fn display_path(&self) -> String {
        self.path.join("/")
    }
}

/// A parsed and validated `.torrent` file.
#[derive(Debug, Clone)]
pub struct Torrent {
    /// The suggested name (file or directory), `name.utf-8` preferred.
    pub name: String,
    /// Bytes per piece.
    pub piece_length: u64,
    /// v1, v2 or hybrid.
    pub version: Version,
    /// For v1 torrents the v1 file list (with pad files); for v2 and hybrid
    /// torrents the v2 file tree, flattened in tree order.
    pub files: Vec<FileEntry>,
    /// For hybrid torrents, the v1 file list (with pad files); empty otherwise.
    pub v1_files: Vec<FileEntry>,
    /// Sum of the non-pad file sizes.
    pub total_size: u64,
    /// v1 piece hashes.
    pub pieces: Vec<[u8; 20]>,
    /// v2 piece layers, keyed by pieces root.
    pub piece_layers: HashMap<Hash32, Vec<Hash32>>,
    /// SHA-1 of the info dictionary's bytes (v1 and hybrid).
    pub info_hash_v1: Option<[u8; 20]>,
    /// SHA-256 of the info dictionary's bytes (v2 and hybrid).
    pub info_hash_v2: Option<Hash32>,
    /// Tracker tiers (`announce-list`, or `announce` alone).
    pub trackers: Vec<Vec<String>>,
    /// BEP 19 web seeds (`url-list`).
    pub web_seeds: Vec<String>,
    /// BEP 27 private flag.
    pub private: bool,
    /// Seconds since the Unix epoch.
    pub creation_date: Option<i64>,
    /// Free-form comment.
    pub comment: Option<String>,
    /// The creating program.
    pub created_by: Option<String>,
}

fn text(node: Node<'_>, field: &str) -> Result<String, Error> {
    let bytes = node
        .as_bytes()
        .ok_or_else(|| Error::invalid(field, "not a string"))?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn int(node: Node<'_>, field: &str) -> Result<i64, Error> {
    match node.as_int() {
        Ok(v) => Ok(v),
        Err(e) if e.kind() == crate::ErrorKind::Overflow => {
            Err(Error::invalid(field, "integer overflows"))
        }
        Err(_) => Err(Error::invalid(field, "not an integer")),
    }
}

fn size(node: Node<'_>, field: &str) -> Result<u64, Error> {
    let v = int(node, field)?;
    u64::try_from(v).map_err(|_| Error::invalid(field, format!("negative size {v}")))
}

fn required<'a>(dict: Dict<'a>, key: &str, prefix: &str) -> Result<Node<'a>, Error> {
    dict.get(key.as_bytes())
        .ok_or_else(|| Error::invalid(format!("{prefix}{key}"), "missing"))
}

/// `info.piece length`: positive and, as libtorrent keeps piece sizes in an
/// int, at most 2^31 - 1.
fn piece_length(info: Dict<'_>) -> Result<u64, Error> {
    let piece_length = size(
        required(info, "piece length", "info.")?,
        "info.piece length",
    )?;
    if piece_length == 0 {
        return Err(Error::invalid("info.piece length", "must be positive"));
    }
    // libtorrent keeps piece sizes in an int; so do readers' buffers.
    if piece_length > i32::MAX as u64 {
        return Err(Error::invalid(
            "info.piece length",
            format!("{piece_length} is too large (at most 2^31 - 1)"),
        ));
    }
    Ok(piece_length)
}

/// v1, v2 or hybrid, from `info.meta version` and `info.pieces`.
fn version(info: Dict<'_>) -> Result<Version, Error> {
    let meta_version = match info.get(b"meta version") {
        Some(n) => Some(int(n, "info.meta version")?),
        None => None,
    };
    let has_v2 = match meta_version {
        Some(2) => true,
        Some(v) => {
            return Err(Error::invalid(
                "info.meta version",
                format!("unsupported version {v}"),
            ));
        }
        None => false,
    };
    let has_v1 = info.get(b"pieces").is_some();
    Ok(match (has_v1, has_v2) {
        (true, true) => Version::Hybrid,
        (true, false) => Version::V1,
        (false, true) => Version::V2,
        (false, false) => return Err(Error::invalid("info.pieces", "missing")),
    })
}

/// `info.pieces`: one SHA-1 per piece of the `stream` bytes of the v1 files.
fn v1_pieces(info: Dict<'_>, stream: u64, piece_length: u64) -> Result<Vec<[u8; 20]>, Error> {
    let pieces = required(info, "pieces", "info.")?
        .as_bytes()
        .ok_or_else(|| Error::invalid("info.pieces", "not a string"))?;
    if pieces.len() % 20 != 0 {
        return Err(Error::invalid(
            "info.pieces",
            format!("length {} is not a multiple of 20", pieces.len()),
        ));
    }
    let hashes: Vec<[u8; 20]> = pieces
        .chunks_exact(20)
        .map(|c| c.try_into().expect("20 bytes"))
        .collect();
    let expected = stream.div_ceil(piece_length);
    if hashes.len() as u64 != expected {
        return Err(Error::invalid(
            "info.pieces",
            format!(
                "{} piece hashes for {stream} bytes in pieces of {piece_length} (expected {expected})",
                hashes.len()
            ),
        ));
    }
    Ok(hashes)
}

/// Checks one path component: no empty names, `.`, `..`, separators or NUL.
pub(crate) fn check_component(name: &str, field: &str) -> Result<(), Error> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(Error::invalid(
            field,
            format!("bad path component {name:?}"),
        ));
    }
    Ok(())
}

impl Torrent {
    /// Parse and validate a `.torrent` file.
    pub fn from_bytes(data: &[u8]) -> Result<Torrent, Error> {
        let doc = crate::decode(data)?;
        let root = doc.root();
        let top = root
            .as_dict()
            .ok_or_else(|| Error::invalid("(top level)", "not a dictionary"))?;
        let info_node = required(top, "info", "")?;
        let info = info_node
            .as_dict()
            .ok_or_else(|| Error::invalid("info", "not a dictionary"))?;

        let name_node = info
            .get(b"name.utf-8")
            .or_else(|| info.get(b"name"))
            .ok_or_else(|| Error::invalid("info.name", "missing"))?;
        let name = text(name_node, "info.name")?;
        check_component(&name, "info.name")?;

        let piece_length = piece_length(info)?;
        let version = version(info)?;
        let (has_v1, has_v2) = (version.has_v1(), version.has_v2());

        let mut torrent = Torrent {
            name,
            piece_length,
            version,
            files: Vec::new(),
            v1_files: Vec::new(),
            total_size: 0,
            pieces: Vec::new(),
            piece_layers: HashMap::new(),
            info_hash_v1: None,
            info_hash_v2: None,
            trackers: Vec::new(),
            web_seeds: Vec::new(),
            private: false,
            creation_date: None,
            comment: None,
            created_by: None,
        };

        if has_v1 {
            torrent.v1_files = parse_v1_files(info, &torrent.name)?;
            let stream: u64 = torrent.v1_files.iter().map(|f| f.length).sum();
            torrent.pieces = v1_pieces(info, stream, piece_length)?;
            torrent.info_hash_v1 = Some(Sha1::digest(info_node.raw()).into());
        }

        if has_v2 {
            if !piece_length.is_power_of_two() || piece_length < BLOCK_SIZE {
                return Err(Error::invalid(
                    "info.piece length",
                    format!("{piece_length} is not a power of two of at least 16 KiB"),
                ));
            }
            let v1_multi = has_v1.then(|| info.get(b"files").is_some());
            torrent.files = parse_file_tree(info, &torrent.name, v1_multi)?;
            torrent.piece_layers = parse_piece_layers(top, &torrent.files, piece_length)?;
            torrent.info_hash_v2 = Some(Sha256::digest(info_node.raw()).into());
            if has_v1 {
                check_hybrid(&torrent.v1_files, &torrent.files)?;
            }
        } else {
            torrent.files = std::mem::take(&mut torrent.v1_files);
        }
        torrent.total_size = torrent
            .files
            .iter()
            .filter(|f| !f.pad)
            .try_fold(0u64, |acc, f| acc.checked_add(f.length))
            .ok_or_else(|| Error::invalid("info.files", "total size overflows"))?;

        torrent.private = match info.get(b"private") {
            Some(n) => int(n, "info.private")? == 1,
            None => false,
        };
        parse_extras(top, &mut torrent)?;
        Ok(torrent)
    }

    /// Number of pieces (v1 pieces, or for v2 the sum over files).
    pub fn piece_count(&self) -> u64 {
        if self.version.has_v1() {
            self.pieces.len() as u64
        } else {
            self.files
                .iter()
                .map(|f| f.length.div_ceil(self.piece_length))
                .sum()
        }
    }

    /// The files as laid out in the v1 piece stream (with pad files).
    pub fn v1_layout(&self) -> &[FileEntry] {
        match self.version {
            Version::V1 => &self.files,
            Version::Hybrid => &self.v1_files,
            Version::V2 => &[],
        }
    }
}

fn parse_v1_files(info: Dict<'_>, name: &str) -> Result<Vec<FileEntry>, Error> {
    let Some(files) = info.get(b"files") else {
        let length = size(
            info.get(b"length")
                .ok_or_else(|| Error::invalid("info.length", "missing"))?,
            "info.length",
        )?;
        return Ok(vec![FileEntry {
            path: vec![name.to_string()],
            length,
            offset: 0,
            pad: false,
            pieces_root: None,
        }]);
    };
    let files = files
        .as_list()
        .ok_or_else(|| Error::invalid("info.files", "not a list"))?;
    let mut out = Vec::new();
    let mut offset = 0u64;
    for (i, file) in files.iter().enumerate() {
        let field = format!("info.files[{i}]");
        let file = file
            .as_dict()
            .ok_or_else(|| Error::invalid(&field, "not a dictionary"))?;
        let length = size(
            file.get(b"length")
                .ok_or_else(|| Error::invalid(format!("{field}.length"), "missing"))?,
            &format!("{field}.length"),
        )?;
        let path_node = file
            .get(b"path.utf-8")
            .or_else(|| file.get(b"path"))
            .ok_or_else(|| Error::invalid(format!("{field}.path"), "missing"))?;
        let path_list = path_node
            .as_list()
            .ok_or_else(|| Error::invalid(format!("{field}.path"), "not a list"))?;
        let mut path = vec![name.to_string()];
        for component in path_list.iter() {
            let c = text(component, &format!("{field}.path"))?;
            check_component(&c, &format!("{field}.path"))?;
            path.push(c);
        }
        if path.len() == 1 {
            return Err(Error::invalid(format!("{field}.path"), "empty path"));
        }
        let pad = match file.get(b"attr") {
            Some(attr) => attr.as_bytes().is_some_and(|a| a.contains(&b'p')),
            None => false,
        };
        out.push(FileEntry {
            path,
            length,
            offset,
            pad,
            pieces_root: None,
        });
        offset = offset
            .checked_add(length)
            .ok_or_else(|| Error::invalid(format!("{field}.length"), "total size overflows"))?;
    }
    if out.is_empty() {
        return Err(Error::invalid("info.files", "no files"));
    }
    Ok(out)
}

/// `v1_multi`: for hybrid torrents, whether the v1 part has a file list.
fn parse_file_tree(
    info: Dict<'_>,
    name: &str,
    v1_multi: Option<bool>,
) -> Result<Vec<FileEntry>, Error> {
    let tree = required(info, "file tree", "info.")?
        .as_dict()
        .ok_or_else(|| Error::invalid("info.file tree", "not a dictionary"))?;
    let mut files = Vec::new();
    // Depth-first without recursion: a stack of dictionary iterators, and the
    // path of names leading to each.
    let mut stack = vec![tree.iter()];
    let mut path: Vec<String> = Vec::new();
    while let Some(iter) = stack.last_mut() {
        let Some((key, value)) = iter.next() else {
            stack.pop();
            path.pop();
            continue;
        };
        let field = "info.file tree";
        let entry = value
            .as_dict()
            .ok_or_else(|| Error::invalid(field, "entry is not a dictionary"))?;
        if key.is_empty() {
            return Err(Error::invalid(field, "file without a name"));
        }
        let component = String::from_utf8_lossy(key).into_owned();
        check_component(&component, field)?;
        if let Some(leaf) = entry.get(b"") {
            let leaf = leaf
                .as_dict()
                .ok_or_else(|| Error::invalid(field, "file entry is not a dictionary"))?;
            let length = size(
                leaf.get(b"length")
                    .ok_or_else(|| Error::invalid(format!("{field}.length"), "missing"))?,
                &format!("{field}.length"),
            )?;
            let pieces_root = match leaf.get(b"pieces root") {
                Some(n) => {
                    let b = n.as_bytes().filter(|b| b.len() == 32).ok_or_else(|| {
                        Error::invalid(format!("{field}.pieces root"), "not 32 bytes")
                    })?;
                    Some(<Hash32>::try_from(b).expect("32 bytes"))
                }
                None if length > 0 => {
                    return Err(Error::invalid(format!("{field}.pieces root"), "missing"));
                }
                None => None,
            };
            let pad = leaf
                .get(b"attr")
                .and_then(|a| a.as_bytes())
                .is_some_and(|a| a.contains(&b'p'));
            let mut full = path.clone();
            full.push(component);
            files.push(FileEntry {
                path: full,
                length,
                offset: 0,
                pad,
                pieces_root: pieces_root.filter(|_| length > 0),
            });
        } else {
            path.push(component);
            stack.push(entry.iter());
        }
    }
    if files.is_empty() {
        return Err(Error::invalid("info.file tree", "no files"));
    }
    // A single file at the top of the tree named like the torrent is a
    // single-file torrent (for hybrids, the v1 part decides); otherwise
    // everything lives in a directory named after the torrent.
    let single = files.len() == 1
        && files[0].path.len() == 1
        && match v1_multi {
            Some(multi) => !multi,
            None => files[0].path[0] == name,
        };
    if !single {
        for f in &mut files {
            f.path.insert(0, name.to_string());
        }
    }
    Ok(files)
}

fn parse_piece_layers(
    top: Dict<'_>,
    files: &[FileEntry],
    piece_length: u64,
) -> Result<HashMap<Hash32, Vec<Hash32>>, Error> {
    let layers = match top.get(b"piece layers") {
        Some(n) => Some(
            n.as_dict()
                .ok_or_else(|| Error::invalid("piece layers", "not a dictionary"))?,
        ),
        None => None,
    };
    let mut out = HashMap::new();
    for file in files {
        let Some(root) = file.pieces_root else {
            continue;
        };
        if file.length <= piece_length || out.contains_key(&root) {
            continue;
        }
        let field = format!("piece layers[{}]", file.display_path());
        let layer = layers
            .and_then(|l| l.get(&root))
            .ok_or_else(|| Error::invalid(&field, "missing"))?
            .as_bytes()
            .ok_or_else(|| Error::invalid(&field, "not a string"))?;
        let pieces = file.length.div_ceil(piece_length);
        if layer.len() as u64 != pieces * 32 {
            return Err(Error::invalid(
                &field,
                format!("{} bytes for {pieces} pieces", layer.len()),
            ));
        }
        let hashes: Vec<Hash32> = layer
            .chunks_exact(32)
            .map(|c| c.try_into().expect("32 bytes"))
            .collect();
        if merkle::root_from_layer(&hashes, piece_length) != root {
            return Err(Error::invalid(
                &field,
                "inconsistent with the file's pieces root",
            ));
        }
        out.insert(root, hashes);
    }
    Ok(out)
}

fn check_hybrid(v1: &[FileEntry], v2: &[FileEntry]) -> Result<(), Error> {
    let real: Vec<&FileEntry> = v1.iter().filter(|f| !f.pad).collect();
    let v2: Vec<&FileEntry> = v2.iter().filter(|f| !f.pad).collect();
    if real.len() != v2.len()
        || real
            .iter()
            .zip(&v2)
            .any(|(a, b)| a.path != b.path || a.length != b.length)
    {
        return Err(Error::invalid(
            "info.files",
            "the v1 file list and the v2 file tree describe different files",
        ));
    }
    Ok(())
}

fn parse_extras(top: Dict<'_>, torrent: &mut Torrent) -> Result<(), Error> {
    if let Some(list) = top.get(b"announce-list").and_then(|n| n.as_list()) {
        for tier in list.iter() {
            let Some(tier) = tier.as_list() else { continue };
            let urls: Vec<String> = tier
                .iter()
                .filter_map(|u| u.as_str().map(str::to_string))
                .filter(|u| !u.is_empty())
                .collect();
            if !urls.is_empty() {
                torrent.trackers.push(urls);
            }
        }
    }
    if torrent.trackers.is_empty()
        && let Some(url) = top.get(b"announce").and_then(|n| n.as_str())
        && !url.is_empty()
    {
        torrent.trackers.push(vec![url.to_string()]);
    }
    match top.get(b"url-list") {
        Some(n) if n.as_list().is_some() => {
            for u in n.as_list().expect("list").iter() {
                if let Some(s) = u.as_str() {
                    torrent.web_seeds.push(s.to_string());
                }
            }
        }
        Some(n) => {
            if let Some(s) = n.as_str().filter(|s| !s.is_empty()) {
                torrent.web_seeds.push(s.to_string());
            }
        }
        None => {}
    }
    if let Some(n) = top.get(b"creation date") {
        torrent.creation_date = n.as_int().ok();
    }
    if let Some(n) = top.get(b"comment.utf-8").or_else(|| top.get(b"comment")) {
        torrent.comment = Some(text(n, "comment")?);
    }
    if let Some(n) = top.get(b"created by") {
        torrent.created_by = Some(text(n, "created by")?);
    }
    Ok(())
}
