//! Creating v1, v2 and hybrid torrents from files on disk, reading each byte
//! once for both hash kinds.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use super::Error;
use super::merkle::{self, BLOCK_SIZE, Hash32};
use super::metainfo::check_component;
use super::{Torrent, Version};
use crate::Encoder;

/// What to create.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// v1, v2 or hybrid (the default, what libtorrent creates).
    pub version: Version,
    /// Bytes per piece: a power of two of at least 16 KiB; `None` picks one
    /// giving roughly 1,000 to 2,000 pieces (16 KiB to 16 MiB).
    pub piece_length: Option<u64>,
    /// Tracker URLs, one tier each, in order.
    pub trackers: Vec<String>,
    /// Web seed URLs.
    pub web_seeds: Vec<String>,
    /// BEP 27 private flag.
    pub private: bool,
    /// Comment.
    pub comment: Option<String>,
    /// `creation date` in seconds since the epoch (`None` leaves it out).
    pub creation_date: Option<i64>,
    /// The torrent's name (`None`: the file or directory's own name).
    pub name: Option<String>,
    /// `info.source`: a tag private trackers use to tell their torrents
    /// apart (it changes the info-hashes).
    pub source: Option<String>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            version: Version::Hybrid,
            piece_length: None,
            trackers: Vec::new(),
            web_seeds: Vec::new(),
            private: false,
            comment: None,
            creation_date: None,
            name: None,
            source: None,
        }
    }
}

struct InputFile {
    /// Components below the torrent's root (empty for a single-file torrent).
    components: Vec<String>,
    disk: PathBuf,
    length: u64,
}

fn name_of(path: &Path) -> Result<String, Error> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::invalid("name", format!("{} has no UTF-8 name", path.display())))?;
    check_component(name, "name")?;
    Ok(name.to_string())
}

/// All regular files under `root`, sorted by path components (the v2 file
/// tree's order), without recursion.
fn collect(root: &Path) -> Result<Vec<InputFile>, Error> {
    let meta = std::fs::metadata(root).map_err(|e| Error::io(root, e))?;
    if meta.is_file() {
        return Ok(vec![InputFile {
            components: Vec::new(),
            disk: root.to_path_buf(),
            length: meta.len(),
        }]);
    }
    let mut out = Vec::new();
    let mut pending = vec![(root.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, components)) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| Error::io(&dir, e))?;
            let path = entry.path();
            let meta = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
            let mut c = components.clone();
            c.push(name_of(&path)?);
            if meta.is_dir() {
                pending.push((path, c));
            } else if meta.is_file() {
                out.push(InputFile {
                    components: c,
                    disk: path,
                    length: meta.len(),
                });
            }
        }
    }
    out.sort_by(|a, b| a.components.cmp(&b.components));
    if out.is_empty() {
        return Err(Error::invalid(
            "files",
            format!("no files under {}", root.display()),
        ));
    }
    Ok(out)
}

/// The largest piece length `create` accepts (mktorrent's limit too).
const MAX_PIECE_LENGTH: u64 = 256 * 1024 * 1024;

fn auto_piece_length(total: u64) -> u64 {
    (total / 1500)
        .next_power_of_two()
        .clamp(BLOCK_SIZE, 16 * 1024 * 1024)
}

/// Per-file v2 hashes.
struct V2File {
    root: Option<Hash32>,
    layer: Vec<Hash32>,
}

/// Create a torrent for the file or directory at `path`, returning the
/// `.torrent` bytes. `progress` is called with bytes read.
pub fn create(
    path: &Path,
    options: &CreateOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<Vec<u8>, Error> {
    let name = match &options.name {
        Some(name) => {
            check_component(name, "name")?;
            name.clone()
        }
        None => name_of(&std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?)?,
    };
    let files = collect(path)?;
    let total: u64 = files.iter().map(|f| f.length).sum();
    let piece_length = match options.piece_length {
        Some(p) if !p.is_power_of_two() || p < BLOCK_SIZE => {
            return Err(Error::invalid(
                "piece length",
                format!("{p} is not a power of two of at least 16 KiB"),
            ));
        }
        Some(p) if p > MAX_PIECE_LENGTH => {
            return Err(Error::invalid(
                "piece length",
                format!("{p} is larger than 256 MiB"),
            ));
        }
        Some(p) => p,
        None => auto_piece_length(total),
    };
    let hashes = hash_files(&files, piece_length, options.version, progress)?;
    let bytes = encode(options, &name, &files, piece_length, &hashes)?;
    // What we write must read back, strictly.
    crate::decode_strict(&bytes)?;
    Torrent::from_bytes(&bytes)?;
    Ok(bytes)
}

/// What reading the files yields, for the version asked.
struct Hashes {
    /// v1: the SHA-1 of each piece, concatenated.
    v1_pieces: Vec<u8>,
    /// v1: path components, length and whether a pad file (hybrid), in
    /// order, pad files between.
    v1_files: Vec<(Vec<String>, u64, bool)>,
    /// v2: each file's root and piece layer.
    v2_files: Vec<V2File>,
}

/// Read every file once, feeding both hash kinds from the same pass.
fn hash_files(
    files: &[InputFile],
    piece_length: u64,
    version: Version,
    progress: &mut dyn FnMut(u64),
) -> Result<Hashes, Error> {
    let pad_files = version == Version::Hybrid;
    let blocks_per_piece = (piece_length / BLOCK_SIZE) as usize;
    let mut v1_pieces: Vec<u8> = Vec::new();
    let mut v1_piece = Sha1::new();
    let mut v1_fill = 0u64;
    let mut v1_files: Vec<(Vec<String>, u64, bool)> = Vec::new();
    let mut v2_files: Vec<V2File> = Vec::new();
    let mut buf = vec![0u8; piece_length as usize];
    for (i, file) in files.iter().enumerate() {
        let mut handle = File::open(&file.disk).map_err(|e| Error::io(&file.disk, e))?;
        let mut remaining = file.length;
        let mut blocks: Vec<Hash32> = Vec::new();
        let mut layer: Vec<Hash32> = Vec::new();
        while remaining > 0 {
            let want = remaining.min(piece_length) as usize;
            handle
                .read_exact(&mut buf[..want])
                .map_err(|e| Error::io(&file.disk, e))?;
            remaining -= want as u64;
            progress(want as u64);
            let chunk = &buf[..want];
            if version.has_v1() {
                let mut rest = chunk;
                while !rest.is_empty() {
                    let take = ((piece_length - v1_fill) as usize).min(rest.len());
                    v1_piece.update(&rest[..take]);
                    v1_fill += take as u64;
                    rest = &rest[take..];
                    if v1_fill == piece_length {
                        v1_pieces.extend_from_slice(&v1_piece.finalize_reset());
                        v1_fill = 0;
                    }
                }
            }
            if version.has_v2() {
                let piece_blocks: Vec<Hash32> = chunk
                    .chunks(BLOCK_SIZE as usize)
                    .map(merkle::block_hash)
                    .collect();
                layer.push(merkle::piece_hash(&piece_blocks, blocks_per_piece));
                blocks.extend(piece_blocks);
            }
        }
        v1_files.push((file.components.clone(), file.length, false));
        // Hybrid: align every file but the last to a piece boundary (BEP 47).
        if pad_files && i + 1 < files.len() && v1_fill != 0 {
            let pad = piece_length - v1_fill;
            let zeros = vec![0u8; pad as usize];
            v1_piece.update(&zeros);
            v1_pieces.extend_from_slice(&v1_piece.finalize_reset());
            v1_fill = 0;
            v1_files.push((vec![".pad".to_string(), pad.to_string()], pad, true));
        }
        if version.has_v2() {
            let root = (file.length > 0).then(|| {
                if file.length > piece_length {
                    merkle::root_from_layer(&layer, piece_length)
                } else {
                    merkle::root_from_blocks(&blocks)
                }
            });
            if file.length <= piece_length {
                layer.clear();
            }
            v2_files.push(V2File { root, layer });
        }
    }
    if version.has_v1() && v1_fill != 0 {
        v1_pieces.extend_from_slice(&v1_piece.finalize_reset());
    }

    Ok(Hashes {
        v1_pieces,
        v1_files,
        v2_files,
    })
}

/// The `.torrent` bytes: keys in sorted order, as BEP 3 wants.
fn encode(
    options: &CreateOptions,
    name: &str,
    files: &[InputFile],
    piece_length: u64,
    hashes: &Hashes,
) -> Result<Vec<u8>, Error> {
    let version = options.version;
    let Hashes {
        v1_pieces,
        v1_files,
        v2_files,
    } = hashes;
    let single = files.len() == 1 && files[0].components.is_empty();
    let mut e = Encoder::new();
    e.dict();
    if let Some(first) = options.trackers.first() {
        e.key("announce").str(first);
        if options.trackers.len() > 1 {
            e.key("announce-list").list();
            for url in &options.trackers {
                e.list().str(url).end();
            }
            e.end();
        }
    }
    if let Some(c) = &options.comment {
        e.key("comment").str(c);
    }
    e.key("created by")
        .str(concat!("seekless ", env!("CARGO_PKG_VERSION")));
    if let Some(d) = options.creation_date {
        e.key("creation date").int(d);
    }
    e.key("info").dict();
    if version.has_v2() {
        e.key("file tree");
        encode_file_tree(&mut e, files, v2_files, single, name);
    }
    if version.has_v1() && !single {
        e.key("files").list();
        for (components, length, pad) in v1_files {
            e.dict();
            if *pad {
                e.key("attr").str("p");
            }
            e.key("length").int(*length as i64);
            e.key("path").list();
            for c in components {
                e.str(c);
            }
            e.end().end();
        }
        e.end();
    }
    if version.has_v1() && single {
        e.key("length").int(files[0].length as i64);
    }
    if version.has_v2() {
        e.key("meta version").int(2);
    }
    e.key("name").str(name);
    e.key("piece length").int(piece_length as i64);
    if version.has_v1() {
        e.key("pieces").bytes(v1_pieces);
    }
    if options.private {
        e.key("private").int(1);
    }
    if let Some(source) = &options.source {
        e.key("source").str(source);
    }
    e.end();
    if version.has_v2() {
        let mut layers: Vec<(&Hash32, &Vec<Hash32>)> = v2_files
            .iter()
            .filter(|f| !f.layer.is_empty())
            .filter_map(|f| f.root.as_ref().map(|r| (r, &f.layer)))
            .collect();
        layers.sort_by(|a, b| a.0.cmp(b.0));
        layers.dedup_by(|a, b| a.0 == b.0);
        e.key("piece layers").dict();
        for (root, layer) in layers {
            e.bytes(root);
            e.bytes(&layer.concat());
        }
        e.end();
    }
    if !options.web_seeds.is_empty() {
        e.key("url-list").list();
        for url in &options.web_seeds {
            e.str(url);
        }
        e.end();
    }
    e.end();
    Ok(e.finish()?)
}

/// The v2 `file tree`: nested dictionaries from the sorted file list.
fn encode_file_tree(
    e: &mut Encoder,
    files: &[InputFile],
    hashes: &[V2File],
    single: bool,
    name: &str,
) {
    e.dict();
    let mut open: Vec<&str> = Vec::new();
    for (file, hash) in files.iter().zip(hashes) {
        let components: Vec<&str> = if single {
            vec![name]
        } else {
            file.components.iter().map(String::as_str).collect()
        };
        let (dirs, leaf) = components.split_at(components.len() - 1);
        let common = open.iter().zip(dirs).take_while(|(a, b)| a == b).count();
        while open.len() > common {
            open.pop();
            e.end();
        }
        for d in &dirs[common..] {
            e.key(d).dict();
            open.push(d);
        }
        e.key(leaf[0]).dict().key("").dict();
        e.key("length").int(file.length as i64);
        if let Some(root) = &hash.root {
            e.key("pieces root").bytes(root);
        }
        e.end().end();
    }
    while open.pop().is_some() {
        e.end();
    }
    e.end();
}

/// Write `bytes` to `path` through a temporary file in the same directory,
/// renamed into place once complete.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    let file_name = path
        .file_name()
        .ok_or_else(|| Error::io(path, std::io::Error::other("not a file name")))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = match dir {
        Some(d) => d.join(tmp_name),
        None => PathBuf::from(tmp_name),
    };
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}
