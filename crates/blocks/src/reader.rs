//! Sequential reading on a separate thread, so the disk (or page cache copy)
//! works while the scanner hashes: large chunks, de-obfuscated by the reader,
//! each with room in front for the bytes the scanner keeps from the last one.

use std::fs::File;
use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::files::BlockFile;
use crate::record::MAX_KEEP;

/// Bytes reserved at the front of every buffer for the kept tail.
pub(crate) const RESERVE: usize = MAX_KEEP;

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

/// Reads files on a thread, handing out chunks in order.
#[derive(Debug)]
pub(crate) struct Reader {
    chunks: Receiver<Result<Chunk>>,
    free: SyncSender<Vec<u8>>,
    thread: Option<JoinHandle<()>>,
}

impl Reader {
    /// Starts reading `files` in order in chunks of `chunk_size` bytes, with
    /// `buffers` buffers in flight.
    pub(crate) fn start(files: Vec<BlockFile>, chunk_size: usize, buffers: usize) -> Reader {
        let buffers = buffers.max(2);
        let (chunk_tx, chunks) = sync_channel(buffers);
        let (free, free_rx) = sync_channel(buffers);
        for _ in 0..buffers {
            free.send(Vec::new()).expect("room for every buffer");
        }
        let thread = std::thread::spawn(move || read_all(files, chunk_size, chunk_tx, free_rx));
        Reader {
            chunks,
            free,
            thread: Some(thread),
        }
    }

    /// The next chunk, or `None` after the last file's last chunk.
    pub(crate) fn next(&mut self) -> Option<Result<Chunk>> {
        self.chunks.recv().ok()
    }

    /// Gives a buffer back for reuse.
    pub(crate) fn recycle(&self, buf: Vec<u8>) {
        let _ = self.free.send(buf);
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // Dropping the receiver makes the thread's next send fail, so it stops.
        let (_, empty) = sync_channel(0);
        drop(std::mem::replace(&mut self.chunks, empty));
        // Dropping the buffer pool's sender wakes a thread waiting for a buffer.
        let (dummy, _) = sync_channel(0);
        drop(std::mem::replace(&mut self.free, dummy));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn read_all(
    files: Vec<BlockFile>,
    chunk_size: usize,
    out: SyncSender<Result<Chunk>>,
    free: Receiver<Vec<u8>>,
) {
    for (index, file) in files.iter().enumerate() {
        let mut handle = match File::open(&file.path) {
            Ok(handle) => handle,
            Err(e) => {
                let _ = out.send(Err(Error::io(&file.path, "open", e)));
                return;
            }
        };
        let mut base = 0u64;
        loop {
            let Ok(mut buf) = free.recv() else { return };
            buf.resize(RESERVE + chunk_size, 0);
            let mut len = 0;
            let mut eof = false;
            while len < chunk_size {
                match handle.read(&mut buf[RESERVE + len..RESERVE + chunk_size]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => len += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = out.send(Err(Error::io(&file.path, "read", e)));
                        return;
                    }
                }
            }
            file.xor.apply(&mut buf[RESERVE..RESERVE + len], base);
            let chunk = Chunk {
                file: index,
                buf,
                len,
                base,
                eof,
            };
            base += len as u64;
            if out.send(Ok(chunk)).is_err() {
                return;
            }
            if eof {
                break;
            }
        }
    }
}
