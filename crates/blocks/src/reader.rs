//! Sequential reading, by default on a separate thread so the disk (or the
//! page-cache copy) works while the scanner hashes: large chunks,
//! de-obfuscated by the reader, each with room in front for the bytes the
//! scanner keeps from the previous one. Files come from a [`FileQueue`]
//! that several readers may share, each reading whole files in turn.

use std::fs::File;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use crate::error::Error;
use crate::files::BlockFile;
use crate::record::MAX_KEEP;

/// Bytes reserved at the front of every buffer for the kept tail.
pub(crate) const RESERVE: usize = MAX_KEEP;

/// A chunk, or the error reading file `.0` gave.
pub(crate) type Item = std::result::Result<Chunk, (usize, Error)>;

/// The files of a scan, handed out one at a time, in order, to whoever asks
/// next; once stopped, to nobody.
#[derive(Debug)]
pub(crate) struct FileQueue {
    files: Vec<BlockFile>,
    next: AtomicUsize,
    stopped: AtomicBool,
}

impl FileQueue {
    pub(crate) fn new(files: Vec<BlockFile>) -> Arc<FileQueue> {
        Arc::new(FileQueue {
            files,
            next: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
        })
    }

    /// The next file not yet taken, with its index.
    pub(crate) fn take(&self) -> Option<(usize, &BlockFile)> {
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        Some((index, self.files.get(index)?))
    }

    /// Hands out no more files (after one failed).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    pub(crate) fn files(&self) -> &[BlockFile] {
        &self.files
    }
}

/// A piece of one file.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// Index of the file in the scan.
    pub file: usize,
    /// `RESERVE` bytes of room, then the data.
    pub buf: Vec<u8>,
    /// Number of data bytes after the reserve.
    pub len: usize,
    /// File offset of the first data byte.
    pub base: u64,
    /// Whether the file ends with this chunk.
    pub eof: bool,
}

/// A zeroed buffer from the allocator's zeroed pages: the reserve only
/// becomes resident where a kept tail is copied into it.
fn new_buffer(chunk_size: usize) -> Vec<u8> {
    vec![0u8; RESERVE + chunk_size]
}

/// Reads whole files from the queue, one chunk at a time.
#[derive(Debug)]
struct FileReader {
    queue: Arc<FileQueue>,
    chunk_size: usize,
    /// The file being read: its index and handle.
    open: Option<(usize, File)>,
    base: u64,
}

impl FileReader {
    /// Fills `buf` with the next chunk; `None` when the queue has no more
    /// files. After an error, the next file is taken from the queue.
    fn next_chunk(&mut self, mut buf: Vec<u8>) -> Option<Item> {
        let (index, handle) = match &mut self.open {
            Some((index, handle)) => (*index, handle),
            None => {
                let (index, file) = self.queue.take()?;
                match File::open(&file.path) {
                    Ok(handle) => {
                        self.base = 0;
                        let (index, handle) = self.open.insert((index, handle));
                        (*index, handle)
                    }
                    Err(e) => return Some(Err((index, Error::io(&file.path, "open", e)))),
                }
            }
        };
        let file = &self.queue.files()[index];
        debug_assert_eq!(buf.len(), RESERVE + self.chunk_size);
        let mut len = 0;
        let mut eof = false;
        while len < self.chunk_size {
            match handle.read(&mut buf[RESERVE + len..RESERVE + self.chunk_size]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.open = None;
                    return Some(Err((index, Error::io(&file.path, "read", e))));
                }
            }
        }
        file.xor.apply(&mut buf[RESERVE..RESERVE + len], self.base);
        let chunk = Chunk {
            file: index,
            buf,
            len,
            base: self.base,
            eof,
        };
        self.base += len as u64;
        if eof {
            self.open = None;
        }
        Some(Ok(chunk))
    }
}

#[derive(Debug)]
enum Mode {
    Inline {
        reader: FileReader,
        free: Vec<Vec<u8>>,
    },
    Thread {
        chunks: Receiver<Item>,
        free: SyncSender<Vec<u8>>,
        thread: Option<JoinHandle<()>>,
    },
}

/// Hands out the chunks of the files it takes from a queue, in order.
#[derive(Debug)]
pub(crate) struct Reader {
    mode: Mode,
}

impl Reader {
    /// Starts reading files from `queue` in chunks of `chunk_size` bytes: on
    /// a thread with `buffers` buffers in flight when `thread`, else on
    /// demand.
    pub(crate) fn start(
        queue: Arc<FileQueue>,
        chunk_size: usize,
        buffers: usize,
        thread: bool,
    ) -> Reader {
        let mut reader = FileReader {
            queue,
            chunk_size,
            open: None,
            base: 0,
        };
        if !thread {
            return Reader {
                mode: Mode::Inline {
                    reader,
                    free: Vec::new(),
                },
            };
        }
        let buffers = buffers.max(2);
        let (chunk_tx, chunks) = sync_channel(buffers);
        let (free, free_rx) = sync_channel::<Vec<u8>>(buffers);
        for _ in 0..buffers {
            free.send(new_buffer(chunk_size))
                .expect("room for every buffer");
        }
        let thread = std::thread::spawn(move || {
            while let Ok(buf) = free_rx.recv() {
                let Some(chunk) = reader.next_chunk(buf) else {
                    return;
                };
                if chunk_tx.send(chunk).is_err() {
                    return;
                }
            }
        });
        Reader {
            mode: Mode::Thread {
                chunks,
                free,
                thread: Some(thread),
            },
        }
    }

    /// The next chunk, or `None` after the last file's last chunk.
    pub(crate) fn next(&mut self) -> Option<Item> {
        match &mut self.mode {
            Mode::Inline { reader, free } => {
                let buf = free.pop().unwrap_or_else(|| new_buffer(reader.chunk_size));
                reader.next_chunk(buf)
            }
            Mode::Thread { chunks, .. } => chunks.recv().ok(),
        }
    }

    /// Gives a buffer back for reuse.
    pub(crate) fn recycle(&mut self, buf: Vec<u8>) {
        match &mut self.mode {
            Mode::Inline { free, .. } => free.push(buf),
            Mode::Thread { free, .. } => {
                let _ = free.send(buf);
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Mode::Thread {
            chunks,
            free,
            thread,
        } = &mut self.mode
        {
            // Closing both channels makes the thread's next send or receive fail.
            let (_, empty) = sync_channel(0);
            drop(std::mem::replace(chunks, empty));
            let (dummy, _) = sync_channel(0);
            drop(std::mem::replace(free, dummy));
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}
