//! What the balances spill when the tally outgrows its budget: partition
//! files (each script goes to one, by a hash of it seeded per run, so a
//! script's partial sums all meet in one partition), then each partition
//! summed alone and written as a run in the output's order, then the runs
//! merged. Every file is a sequence of records: the script's length (u32,
//! little-endian), the script, the balance and the coin count (u64 each).
//! The files live in a scratch directory removed when done or failed.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::hash::BuildHasher;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use hashbrown::DefaultHashBuilder;

use crate::coin::MAX_SCRIPT_SIZE;
use crate::error::{Error, Result};

use super::tally::order;

/// The directory of a run's spill files, made when first needed and
/// removed (with what is in it) on drop.
#[derive(Debug)]
pub(crate) struct Scratch {
    dir: PathBuf,
    made: bool,
}

impl Scratch {
    pub(crate) fn new(dir: PathBuf) -> Scratch {
        Scratch { dir, made: false }
    }

    fn path(&mut self, name: &str) -> Result<PathBuf> {
        if !self.made {
            std::fs::create_dir(&self.dir).map_err(|e| Error::io(&self.dir, "create", e))?;
            self.made = true;
        }
        Ok(self.dir.join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.made {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn create(path: &Path, buffer: usize) -> Result<BufWriter<File>> {
    let file = File::create(path).map_err(|e| Error::io(path, "create", e))?;
    Ok(BufWriter::with_capacity(buffer, file))
}

fn write_record(
    out: &mut impl Write,
    script: &[u8],
    balance: u64,
    coins: u64,
) -> std::io::Result<()> {
    out.write_all(&(script.len() as u32).to_le_bytes())?;
    out.write_all(script)?;
    out.write_all(&balance.to_le_bytes())?;
    out.write_all(&coins.to_le_bytes())
}

/// Flushes a spill file's buffer to it.
fn close(out: BufWriter<File>, path: &Path) -> Result<()> {
    out.into_inner()
        .map(drop)
        .map_err(|e| Error::io(path, "write", e.into_error()))
}

/// What the partition hash mixes in before the script.
const PARTITION_SALT: u64 = 0x9e37_79b9_7f4a_7c15;

/// Scripts' partial sums spread over partition files.
pub(crate) struct Partitions {
    files: Vec<BufWriter<File>>,
    paths: Vec<PathBuf>,
    hasher: DefaultHashBuilder,
}

impl Partitions {
    /// `count` partition files in `scratch`, each written through a buffer
    /// of `buffer` bytes.
    pub(crate) fn create(scratch: &mut Scratch, count: usize, buffer: usize) -> Result<Self> {
        let mut partitions = Partitions {
            files: Vec::with_capacity(count),
            paths: Vec::with_capacity(count),
            hasher: DefaultHashBuilder::default(),
        };
        for i in 0..count {
            let path = scratch.path(&format!("part-{i:03}"))?;
            partitions.files.push(create(&path, buffer)?);
            partitions.paths.push(path);
        }
        Ok(partitions)
    }

    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    pub(crate) fn push(&mut self, script: &[u8], balance: u64, coins: u64) -> Result<()> {
        // Salted, so that even a hasher seeded as the tally's is gives
        // bits unrelated to those its table places a script by (else one
        // partition's scripts would crowd a fraction of the table).
        let hash = self.hasher.hash_one((PARTITION_SALT, script));
        let i = (hash % self.files.len() as u64) as usize;
        write_record(&mut self.files[i], script, balance, coins)
            .map_err(|e| Error::io(&self.paths[i], "write", e))
    }

    /// Flushes every file; returns their paths.
    pub(crate) fn finish(self) -> Result<Vec<PathBuf>> {
        for (file, path) in self.files.into_iter().zip(&self.paths) {
            close(file, path)?;
        }
        Ok(self.paths)
    }
}

/// Reads a spill file's records back.
pub(crate) struct Records {
    input: BufReader<File>,
    path: PathBuf,
}

impl Records {
    pub(crate) fn open(path: &Path, buffer: usize) -> Result<Records> {
        let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
        Ok(Records {
            input: BufReader::with_capacity(buffer, file),
            path: path.to_path_buf(),
        })
    }

    /// The next record's script into `script`, and its sums; `None` at the
    /// end of the file.
    pub(crate) fn next(&mut self, script: &mut Vec<u8>) -> Result<Option<(u64, u64)>> {
        let mut len = [0u8; 4];
        match self.input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(Error::io(&self.path, "read", e)),
        }
        let len = u32::from_le_bytes(len) as usize;
        let read = |input: &mut BufReader<File>, script: &mut Vec<u8>| {
            if len > MAX_SCRIPT_SIZE {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a record longer than any script: the file changed while in use",
                ));
            }
            script.resize(len, 0);
            input.read_exact(script)?;
            let mut sums = [0u8; 16];
            input.read_exact(&mut sums)?;
            let (balance, coins) = sums.split_at(8);
            Ok((
                u64::from_le_bytes(balance.try_into().expect("8 bytes")),
                u64::from_le_bytes(coins.try_into().expect("8 bytes")),
            ))
        };
        read(&mut self.input, script)
            .map(Some)
            .map_err(|e| Error::io(&self.path, "read", e))
    }
}

/// A sorted run being written: the records of one partition, summed, in
/// the output's order.
pub(crate) struct RunWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl RunWriter {
    pub(crate) fn create(scratch: &mut Scratch, number: usize, buffer: usize) -> Result<Self> {
        let path = scratch.path(&format!("run-{number:03}"))?;
        Ok(RunWriter {
            out: create(&path, buffer)?,
            path,
        })
    }

    pub(crate) fn push(&mut self, script: &[u8], balance: u64, coins: u64) -> Result<()> {
        write_record(&mut self.out, script, balance, coins)
            .map_err(|e| Error::io(&self.path, "write", e))
    }

    pub(crate) fn finish(self) -> Result<PathBuf> {
        close(self.out, &self.path)?;
        Ok(self.path)
    }
}

/// The head of one run in the merge.
struct Head {
    script: Vec<u8>,
    balance: u64,
    coins: u64,
    run: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    /// Reversed: the heap's greatest is the output's first.
    fn cmp(&self, other: &Self) -> Ordering {
        order(other.balance, &other.script, self.balance, &self.script)
            .then_with(|| other.run.cmp(&self.run))
    }
}

/// Where a script's sums go, in the output's order.
pub(crate) type Emit<'a> = dyn FnMut(&[u8], u64, u64) -> Result<()> + 'a;

/// Merges sorted runs (each script in one run only) into one sequence in
/// the output's order, handing each record to `f`.
pub(crate) fn merge(runs: &[PathBuf], buffer: usize, f: &mut Emit<'_>) -> Result<()> {
    let mut readers = runs
        .iter()
        .map(|path| Records::open(path, buffer))
        .collect::<Result<Vec<_>>>()?;
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (run, reader) in readers.iter_mut().enumerate() {
        let mut script = Vec::new();
        if let Some((balance, coins)) = reader.next(&mut script)? {
            heap.push(Head {
                script,
                balance,
                coins,
                run,
            });
        }
    }
    while let Some(mut head) = heap.pop() {
        f(&head.script, head.balance, head.coins)?;
        if let Some((balance, coins)) = readers[head.run].next(&mut head.script)? {
            head.balance = balance;
            head.coins = coins;
            heap.push(head);
        }
    }
    Ok(())
}
