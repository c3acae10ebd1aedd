//! A gzip stream (RFC 1952) of one member or more, inflated as its bytes
//! are pushed in: each member's header parsed byte by byte (its optional
//! fields skipped, never stored), its deflate data inflated into the
//! caller's buffer, its trailer's CRC-32 and length checked. Nothing grows
//! with the input: the state is a few bytes and the inflater's window.

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Header flags (RFC 1952 2.3.1).
const FHCRC: u8 = 2;
const FEXTRA: u8 = 4;
const FNAME: u8 = 8;
const FCOMMENT: u8 = 16;
const RESERVED: u8 = 0xe0;

/// Where in the stream the next byte falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before a member (the first, or the next after a whole one).
    Between,
    /// In the 10 fixed bytes of a header: how many came.
    Fixed(u8),
    /// In the length of the extra field: how many of its 2 bytes came.
    ExtraLength(u8),
    /// In the extra field: bytes left.
    Extra(u16),
    /// In the zero-terminated file name.
    Name,
    /// In the zero-terminated comment.
    Comment,
    /// In the header's CRC-16: how many of its 2 bytes came.
    HeaderCrc(u8),
    /// In the deflate data.
    Body,
    /// In the trailer: how many of its 8 bytes came.
    Trailer(u8),
}

/// The inflater of a stream of gzip members (see the module
/// documentation).
#[derive(Debug)]
pub(super) struct Gunzip {
    state: State,
    /// The header's flags, and the bytes of the field being read.
    flags: u8,
    scratch: [u8; 10],
    inflate: Decompress,
    /// Over the member's content, and over its header (for FHCRC).
    crc: Crc,
    header_crc: Crc,
    /// A damage found after some content was inflated: told at the next
    /// call, once that content was taken, so that it is found at the same
    /// point of the content however the input was cut.
    damaged: Option<String>,
}

impl Gunzip {
    pub(super) fn new() -> Gunzip {
        Gunzip {
            state: State::Between,
            flags: 0,
            scratch: [0; 10],
            inflate: Decompress::new(false),
            crc: Crc::new(),
            header_crc: Crc::new(),
            damaged: None,
        }
    }

    /// Whether the stream is between members: every member so far whole.
    pub(super) fn between_members(&self) -> bool {
        self.state == State::Between
    }

    /// Takes bytes of `input` and inflates into `out`: returns how many
    /// bytes were taken and how many written. Stops when `out` is full,
    /// when `input` is used up, or at the end of a member (so the caller
    /// sees where members end). Taking nothing and writing nothing means
    /// it needs more input. The error says what is damaged.
    pub(super) fn inflate(
        &mut self,
        input: &[u8],
        out: &mut [u8],
    ) -> Result<(usize, usize), String> {
        if let Some(damage) = &self.damaged {
            return Err(damage.clone());
        }
        let mut used = 0;
        loop {
            let rest = &input[used..];
            if rest.is_empty() && self.state != State::Body {
                return Ok((used, 0));
            }
            match self.state {
                State::Between => {
                    self.header_crc.reset();
                    self.state = State::Fixed(0);
                }
                State::Fixed(have) => {
                    let n = self.gather(rest, have, 10);
                    used += n;
                    let have = have + n as u8;
                    // Checked as soon as they come: a file that is no gzip
                    // at all is told from its first bytes.
                    let fixed = &self.scratch[..usize::from(have)];
                    if fixed.iter().zip([0x1f, 0x8b]).any(|(&b, id)| b != id) {
                        return Err("not a gzip member".into());
                    }
                    if let Some(&method) = fixed.get(2)
                        && method != 8
                    {
                        return Err(format!("compression method {method}, not deflate"));
                    }
                    if fixed.get(3).is_some_and(|flags| flags & RESERVED != 0) {
                        return Err("reserved header flags set".into());
                    }
                    if have < 10 {
                        self.state = State::Fixed(have);
                        continue;
                    }
                    self.flags = self.scratch[3];
                    self.state = State::ExtraLength(0);
                    self.skip_absent_fields();
                }
                State::ExtraLength(have) => {
                    let n = self.gather(rest, have, 2);
                    used += n;
                    let have = have + n as u8;
                    self.state = if have < 2 {
                        State::ExtraLength(have)
                    } else {
                        State::Extra(u16::from_le_bytes([self.scratch[0], self.scratch[1]]))
                    };
                    self.skip_absent_fields();
                }
                State::Extra(left) => {
                    let n = rest.len().min(usize::from(left));
                    self.header_crc.update(&rest[..n]);
                    used += n;
                    self.state = State::Extra(left - n as u16);
                    self.skip_absent_fields();
                }
                State::Name | State::Comment => {
                    let (n, ended) = match rest.iter().position(|&b| b == 0) {
                        Some(zero) => (zero + 1, true),
                        None => (rest.len(), false),
                    };
                    self.header_crc.update(&rest[..n]);
                    used += n;
                    if ended {
                        self.state = if self.state == State::Name {
                            State::Comment
                        } else {
                            State::HeaderCrc(0)
                        };
                        self.skip_absent_fields();
                    }
                }
                State::HeaderCrc(have) => {
                    let expected = (self.header_crc.sum() & 0xffff) as u16;
                    let n = rest.len().min(usize::from(2 - have));
                    self.scratch[usize::from(have)..usize::from(have) + n]
                        .copy_from_slice(&rest[..n]);
                    used += n;
                    let have = have + n as u8;
                    if have < 2 {
                        self.state = State::HeaderCrc(have);
                        continue;
                    }
                    if u16::from_le_bytes([self.scratch[0], self.scratch[1]]) != expected {
                        return Err("the header's checksum does not match it".into());
                    }
                    self.start_body();
                }
                State::Body => {
                    let (in_before, out_before) =
                        (self.inflate.total_in(), self.inflate.total_out());
                    let status = self.inflate.decompress(rest, out, FlushDecompress::None);
                    let taken = (self.inflate.total_in() - in_before) as usize;
                    let made = (self.inflate.total_out() - out_before) as usize;
                    used += taken;
                    self.crc.update(&out[..made]);
                    match status {
                        Ok(Status::StreamEnd) => {
                            self.state = State::Trailer(0);
                            if made > 0 {
                                return Ok((used, made));
                            }
                        }
                        Ok(_) => return Ok((used, made)),
                        Err(_) => {
                            // Not the inflater's message: zlib-rs words the
                            // same damage differently depending on how the
                            // input was cut (the place it is found at does
                            // not depend on it).
                            let damage = "invalid deflate data".to_string();
                            if made == 0 {
                                return Err(damage);
                            }
                            self.damaged = Some(damage);
                            return Ok((used, made));
                        }
                    }
                }
                State::Trailer(have) => {
                    let n = self.gather(rest, have, 8);
                    used += n;
                    let have = have + n as u8;
                    if have < 8 {
                        self.state = State::Trailer(have);
                        continue;
                    }
                    let word = |at: usize| {
                        u32::from_le_bytes(self.scratch[at..at + 4].try_into().expect("4 bytes"))
                    };
                    if word(0) != self.crc.sum() {
                        return Err("a member's CRC-32 does not match its content".into());
                    }
                    if word(4) != self.crc.amount() {
                        return Err("a member's length does not match its content".into());
                    }
                    self.state = State::Between;
                    return Ok((used, 0));
                }
            }
        }
    }

    /// Copies bytes of `rest` into the scratch bytes `have..want` (header
    /// bytes also into the header's CRC); how many.
    fn gather(&mut self, rest: &[u8], have: u8, want: u8) -> usize {
        let (have, want) = (usize::from(have), usize::from(want));
        let n = rest.len().min(want - have);
        self.scratch[have..have + n].copy_from_slice(&rest[..n]);
        if !matches!(self.state, State::Trailer(_)) {
            self.header_crc.update(&rest[..n]);
        }
        n
    }

    /// Passes over the header fields the flags say are absent, and those
    /// just ended, to the next one present (or the deflate data).
    fn skip_absent_fields(&mut self) {
        loop {
            self.state = match self.state {
                State::ExtraLength(0) if self.flags & FEXTRA == 0 => State::Name,
                State::Extra(0) => State::Name,
                State::Name if self.flags & FNAME == 0 => State::Comment,
                State::Comment if self.flags & FCOMMENT == 0 => State::HeaderCrc(0),
                State::HeaderCrc(0) if self.flags & FHCRC == 0 => {
                    self.start_body();
                    return;
                }
                _ => return,
            };
        }
    }

    fn start_body(&mut self) {
        self.inflate.reset(false);
        self.crc.reset();
        self.state = State::Body;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// Everything `stream` inflates to, pushed `cut` bytes at a time into
    /// an output buffer of `room` bytes.
    fn inflate_all(stream: &[u8], cut: usize, room: usize) -> Result<Vec<u8>, String> {
        let mut gunzip = Gunzip::new();
        let mut content = Vec::new();
        let mut out = vec![0u8; room];
        for chunk in stream.chunks(cut) {
            let mut at = 0;
            loop {
                let (used, made) = gunzip.inflate(&chunk[at..], &mut out)?;
                at += used;
                content.extend_from_slice(&out[..made]);
                if used == 0 && made == 0 {
                    break;
                }
            }
            assert_eq!(at, chunk.len());
        }
        if !gunzip.between_members() {
            return Err("truncated".into());
        }
        Ok(content)
    }

    /// A member with every optional header field (RFC 1952), as some
    /// gzip tools write them, then a plain one.
    fn members(a: &[u8], b: &[u8]) -> Vec<u8> {
        let mut first = flate2::GzBuilder::new()
            .filename("name.bundle")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4])
            .write(Vec::new(), flate2::Compression::fast());
        first.write_all(a).unwrap();
        let mut stream = first.finish().unwrap();
        // Set FHCRC and insert the header's CRC-16 before the deflate data.
        let header_len = 10 + 2 + 4 + "name.bundle".len() + 1 + "a comment".len() + 1;
        stream[3] |= FHCRC;
        let mut crc = Crc::new();
        crc.update(&stream[..header_len]);
        let crc16 = (crc.sum() & 0xffff) as u16;
        stream.splice(header_len..header_len, crc16.to_le_bytes());
        let mut second = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        second.write_all(b).unwrap();
        stream.extend_from_slice(&second.finish().unwrap());
        stream
    }

    #[test]
    fn members_inflate_the_same_in_any_cut() {
        let a: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let b = b"the second member".repeat(100);
        let stream = members(&a, &b);
        let whole = [a.clone(), b.clone()].concat();
        for (cut, room) in [(stream.len(), 1 << 16), (1, 7), (3, 4096), (1000, 1)] {
            assert_eq!(inflate_all(&stream, cut, room).unwrap(), whole, "cut {cut}");
        }
        // Cut anywhere short: never whole.
        for end in [1, 9, 12, 20, stream.len() / 2, stream.len() - 1] {
            assert!(inflate_all(&stream[..end], 5, 64).is_err(), "end {end}");
        }
    }

    #[test]
    fn damage_is_named() {
        let stream = members(b"abc", b"def");
        let damaged = |at: usize, xor: u8| {
            let mut s = stream.clone();
            s[at] ^= xor;
            inflate_all(&s, 4, 64).unwrap_err()
        };
        assert_eq!(damaged(0, 1), "not a gzip member");
        assert_eq!(damaged(2, 1), "compression method 9, not deflate");
        assert_eq!(damaged(3, 0x80), "reserved header flags set");
        assert_eq!(damaged(14, 1), "the header's checksum does not match it");
        // The last member's CRC-32, then its length.
        let n = stream.len();
        assert_eq!(
            damaged(n - 8, 1),
            "a member's CRC-32 does not match its content"
        );
        assert_eq!(
            damaged(n - 4, 1),
            "a member's length does not match its content"
        );
    }
}
