//! The one error type of this crate.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, with the position where it applies.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing a file failed.
    Io {
        /// The file involved.
        path: PathBuf,
        /// What was being done ("read", "write", "open", ...).
        action: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A data structure ended before its last field.
    UnexpectedEof {
        /// Offset of the field that could not be read, from the start of the parsed bytes.
        offset: usize,
        /// What was being read.
        what: &'static str,
    },
    /// A CompactSize integer used more bytes than needed (Core rejects these).
    NonCanonicalCompactSize {
        /// Offset of the integer.
        offset: usize,
    },
    /// A CompactSize count or length is above Core's limit or cannot fit in what is left.
    SizeTooLarge {
        /// Offset of the count.
        offset: usize,
        /// The value read.
        size: u64,
        /// The largest acceptable value at that point.
        limit: u64,
    },
    /// A transaction's segwit flag byte is not one Core knows.
    UnknownTxFlags {
        /// Offset of the flag byte.
        offset: usize,
        /// The flag value.
        flags: u8,
    },
    /// A transaction declares witness data but every witness stack is empty.
    SuperfluousWitness {
        /// Offset of the transaction.
        offset: usize,
    },
    /// Bytes left over after the last transaction of a block.
    TrailingBytes {
        /// Offset of the first unused byte.
        offset: usize,
    },
    /// A block has no transactions, or its first is not a coinbase.
    BadCoinbase {
        /// Offset of the first transaction.
        offset: usize,
    },
    /// A block's merkle root does not match its transactions.
    BadMerkleRoot,
    /// A block's transaction list is mutated (a duplicated subtree, CVE-2012-2459).
    MutatedMerkleTree,
    /// A block's witness commitment (BIP 141) does not match its
    /// transactions' witness data.
    BadWitnessCommitment,
    /// A block with a witness commitment whose coinbase witness is not one
    /// 32-byte reserved value.
    BadWitnessReservedValue,
    /// A block with witness data and no witness commitment.
    UnexpectedWitness,
    /// A block's weight is above 4,000,000.
    WeightTooHigh {
        /// The block weight.
        weight: u64,
    },
    /// A header's proof of work does not meet its own nBits (or nBits is malformed).
    BadProofOfWork,
    /// A hexadecimal argument is malformed.
    BadHex {
        /// The text given.
        text: String,
        /// Number of bytes required.
        expected_len: usize,
    },
    /// A network name is not one of main, testnet3, testnet4, signet, regtest.
    UnknownNetwork {
        /// The name given.
        name: String,
    },
    /// No valid block record was found in the first part of any file, so the
    /// network cannot be detected.
    NetworkNotDetected,
    /// The xor.dat file is not 8 bytes long.
    BadXorFile {
        /// The file.
        path: PathBuf,
        /// Its length.
        len: u64,
    },
    /// A path is neither a block file nor a directory holding blkNNNNN.dat files.
    NoBlockFiles {
        /// The path given.
        path: PathBuf,
    },
    /// More files or a larger file than a block position can express.
    TooManyFiles {
        /// Number of files, or the file's length.
        value: u64,
    },
    /// A block changed on disk between the scan and a later read.
    BlockChanged {
        /// The file.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
    },
    /// An output directory holds one of the input block files.
    OutputHoldsInput {
        /// The output directory.
        dir: PathBuf,
        /// The input file inside it.
        input: PathBuf,
    },
    /// An output directory is not empty (and replacing is not allowed).
    OutputNotEmpty {
        /// The output directory.
        dir: PathBuf,
    },
    /// An output directory holds a block file an earlier run did not write.
    OutputForeign {
        /// The output directory.
        dir: PathBuf,
        /// The file's name.
        file: String,
    },
    /// A VARINT is longer than its type allows (Core's "ReadVarInt(): size
    /// too large").
    VarIntTooLarge {
        /// Offset of the VARINT.
        offset: u64,
    },
    /// A compressed public key (script codes 0x04/0x05) whose x is not on
    /// the secp256k1 curve, so its script cannot be rebuilt.
    BadCompressedKey {
        /// Offset of the key's bytes.
        offset: u64,
    },
    /// A coin's value is above 21 million bitcoin (Core's `MoneyRange`).
    AmountTooLarge {
        /// Offset of the coin.
        offset: u64,
        /// The value, in satoshis.
        value: u64,
    },
    /// A file does not start with the UTXO snapshot magic `utxo\xff`.
    NotASnapshot {
        /// The first bytes of the file.
        found: [u8; 5],
    },
    /// A snapshot format version this build does not read.
    SnapshotVersion {
        /// The version in the file.
        version: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// A snapshot's network magic is not one of the known networks'.
    SnapshotNetwork {
        /// The 4 magic bytes.
        magic: [u8; 4],
    },
    /// A snapshot holds more or fewer coins than its header declares.
    CoinCount {
        /// The count in the header.
        declared: u64,
        /// The coins found (or written) when the mismatch showed.
        found: u64,
    },
    /// A snapshot's coins are not in Core's order (each txid once, its
    /// coins in the order of their VARINT-coded indexes), or a txid's group
    /// of coins is empty.
    SnapshotOrder {
        /// Offset of the txid or coin out of order.
        offset: u64,
    },
    /// Bytes after a snapshot's last coin.
    SnapshotTrailingBytes {
        /// Offset of the first unused byte.
        offset: u64,
    },
    /// A coin given to the snapshot writer comes before or equals the
    /// previous one in Core's order.
    CoinOrder {
        /// Index of the coin among those given, from 0.
        index: u64,
    },
    /// A coin given to the snapshot writer cannot be in Core's UTXO set.
    UnwritableCoin {
        /// Index of the coin among those given, from 0.
        index: u64,
        /// Why.
        reason: &'static str,
    },
    /// A block of the best chain breaks one of Core's rules for connecting
    /// it to the UTXO set: the set stays at its parent.
    NotConnected {
        /// The block's hash (internal byte order, as `BlockHash` holds it).
        hash: [u8; 32],
        /// Its height.
        height: u32,
        /// The transaction that breaks the rule (internal byte order), when
        /// one does.
        txid: Option<[u8; 32]>,
        /// The rule, with the input or output concerned.
        reject: Reject,
    },
    /// `--height` names a height the best chain does not reach.
    HeightPastTip {
        /// The height asked for.
        height: u32,
        /// The best chain's tip height (`None`: no genesis found).
        tip: Option<u32>,
    },
    /// A best-chain block does not parse (the transaction index reads
    /// every transaction).
    UnparsableBlock {
        /// The block's hash (internal byte order).
        hash: [u8; 32],
        /// Its height.
        height: u32,
        /// What the parser said.
        detail: String,
    },
    /// A transaction index file is damaged or not one.
    BadTxIndex {
        /// The index file.
        path: PathBuf,
        /// Offset of what is wrong.
        offset: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// A transaction index of a version this build does not know.
    TxIndexTooNew {
        /// The index file.
        path: PathBuf,
        /// Its version.
        version: u32,
    },
    /// A block file is shorter than when it was indexed.
    BlockFileShorter {
        /// The block file.
        path: PathBuf,
        /// Its length now.
        len: u64,
        /// Its length when indexed.
        expected: u64,
    },
    /// The bytes where the index puts a transaction are not it.
    TxChanged {
        /// The block file.
        path: PathBuf,
        /// Offset of the transaction.
        offset: u64,
    },
    /// A file of a chainstate directory (`--state`) is not what the state
    /// keeps there: damaged, of a newer version or another network, or the
    /// directory is not a state.
    BadState {
        /// The file (or the directory).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another run holds the chainstate directory's lock.
    StateInUse {
        /// The lock file.
        path: PathBuf,
    },
    /// The state's tip is not among the blocks scanned (and no height was
    /// asked): not a reorg, block files missing.
    StateTipUnknown {
        /// The state's tip.
        height: u32,
        /// Its hash (internal byte order).
        hash: [u8; 32],
    },
    /// The state's tip must go back past what its undo data reaches: a
    /// reorg deeper than the undo kept, or `--height` below it.
    UndoTooShort {
        /// The state's tip.
        height: u32,
        /// The lowest height its undo data can take it back to.
        reach: u32,
    },
}

/// Why a block does not connect, with Core's reject reason.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reject {
    /// The block does not parse (what the parser said).
    Unparsable {
        /// The parse error.
        detail: String,
    },
    /// A block-level rule: no coinbase first, a second coinbase, a merkle
    /// root that does not match, a transaction with no inputs or outputs.
    Malformed {
        /// Core's reason (`bad-cb-missing`, `bad-txnmrklroot`, ...).
        reason: &'static str,
    },
    /// An input spends an output that does not exist or is spent
    /// (`bad-txns-inputs-missingorspent`).
    MissingOrSpent {
        /// The input's index.
        input: u32,
        /// The txid of what it spends (internal byte order).
        prev_txid: [u8; 32],
        /// The index of the output it spends.
        prev_vout: u32,
    },
    /// Two inputs of one transaction spend the same output
    /// (`bad-txns-inputs-duplicate`).
    DuplicateInput {
        /// The second input's index.
        input: u32,
    },
    /// An input spends a coinbase output less than 100 blocks deep
    /// (`bad-txns-premature-spend-of-coinbase`).
    PrematureCoinbaseSpend {
        /// The input's index.
        input: u32,
        /// The height of the coinbase spent.
        coin_height: u32,
    },
    /// An input's value, or the sum so far, is outside 0..=MAX_MONEY
    /// (`bad-txns-inputvalues-outofrange`).
    InputValuesOutOfRange {
        /// The input's index.
        input: u32,
    },
    /// An output's value is negative or above MAX_MONEY
    /// (`bad-txns-vout-negative`, `bad-txns-vout-toolarge`).
    OutputValueOutOfRange {
        /// The output's index.
        output: u32,
        /// Its value.
        value: i64,
    },
    /// The outputs' sum is above MAX_MONEY (`bad-txns-txouttotal-toolarge`).
    OutputTotalTooLarge,
    /// The inputs are worth less than the outputs (`bad-txns-in-belowout`).
    InputsBelowOutputs {
        /// The inputs' sum.
        inputs: u64,
        /// The outputs' sum.
        outputs: u64,
    },
    /// A transaction other than a coinbase creates an output that exists
    /// unspent (`bad-txns-BIP30`).
    OutputExists {
        /// The output's index.
        output: u32,
    },
}

impl Reject {
    /// Core's reject reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Reject::Unparsable { .. } => "bad-blk-unparsable",
            Reject::Malformed { reason } => reason,
            Reject::MissingOrSpent { .. } => "bad-txns-inputs-missingorspent",
            Reject::DuplicateInput { .. } => "bad-txns-inputs-duplicate",
            Reject::PrematureCoinbaseSpend { .. } => "bad-txns-premature-spend-of-coinbase",
            Reject::InputValuesOutOfRange { .. } => "bad-txns-inputvalues-outofrange",
            Reject::OutputValueOutOfRange { value, .. } if *value < 0 => "bad-txns-vout-negative",
            Reject::OutputValueOutOfRange { .. } => "bad-txns-vout-toolarge",
            Reject::OutputTotalTooLarge => "bad-txns-txouttotal-toolarge",
            Reject::InputsBelowOutputs { .. } => "bad-txns-in-belowout",
            Reject::OutputExists { .. } => "bad-txns-BIP30",
        }
    }
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reject::Unparsable { detail } => write!(f, "unparsable block: {detail}"),
            Reject::Malformed { reason } => write!(f, "{reason}"),
            Reject::MissingOrSpent {
                input,
                prev_txid,
                prev_vout,
            } => write!(
                f,
                "input {input} spends {}:{}, missing or spent ({})",
                Reversed(prev_txid),
                prev_vout,
                self.reason()
            ),
            Reject::DuplicateInput { input } => {
                write!(
                    f,
                    "input {input} spends an output an earlier input spends ({})",
                    self.reason()
                )
            }
            Reject::PrematureCoinbaseSpend { input, coin_height } => write!(
                f,
                "input {input} spends the coinbase of height {coin_height} before it matures ({})",
                self.reason()
            ),
            Reject::InputValuesOutOfRange { input } => write!(
                f,
                "input {input}: input values out of range ({})",
                self.reason()
            ),
            Reject::OutputValueOutOfRange { output, value } => {
                write!(
                    f,
                    "output {output} value {value} out of range ({})",
                    self.reason()
                )
            }
            Reject::OutputTotalTooLarge => {
                write!(f, "outputs sum above 21000000 BTC ({})", self.reason())
            }
            Reject::InputsBelowOutputs { inputs, outputs } => write!(
                f,
                "inputs worth {inputs} below outputs worth {outputs} ({})",
                self.reason()
            ),
            Reject::OutputExists { output } => write!(
                f,
                "output {output} already exists unspent ({})",
                self.reason()
            ),
        }
    }
}

/// A hash the way Core shows it: hex, bytes reversed.
pub(crate) struct Reversed<'a>(pub(crate) &'a [u8; 32]);

impl fmt::Display for Reversed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().rev().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// The error type of `seekless-blocks`.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

impl Error {
    /// The kind of failure, with its details.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
        source: std::io::Error,
    ) -> Self {
        ErrorKind::Io {
            path: path.into(),
            action,
            source,
        }
        .into()
    }

    /// This error with an I/O failure's path set to `path`: the snapshot
    /// reader and writer name their stream, not the file behind it.
    pub(crate) fn in_file(self, path: &Path) -> Self {
        match self.kind() {
            ErrorKind::Io { action, source, .. } => Error::io(
                path,
                action,
                std::io::Error::new(source.kind(), source.to_string()),
            ),
            _ => self,
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io {
                path,
                action,
                source,
            } => {
                write!(f, "cannot {action} {}: {source}", path.display())
            }
            ErrorKind::UnexpectedEof { offset, what } => {
                write!(
                    f,
                    "unexpected end of data reading {what} at offset {offset}"
                )
            }
            ErrorKind::NonCanonicalCompactSize { offset } => {
                write!(f, "non-canonical compact size at offset {offset}")
            }
            ErrorKind::SizeTooLarge {
                offset,
                size,
                limit,
            } => {
                write!(
                    f,
                    "size {size} at offset {offset} is above the limit {limit}"
                )
            }
            ErrorKind::UnknownTxFlags { offset, flags } => {
                write!(
                    f,
                    "unknown transaction flags {flags:#04x} at offset {offset}"
                )
            }
            ErrorKind::SuperfluousWitness { offset } => {
                write!(
                    f,
                    "superfluous witness record in transaction at offset {offset}"
                )
            }
            ErrorKind::TrailingBytes { offset } => {
                write!(
                    f,
                    "trailing bytes after the last transaction at offset {offset}"
                )
            }
            ErrorKind::BadCoinbase { offset } => {
                write!(
                    f,
                    "missing or misplaced coinbase transaction at offset {offset}"
                )
            }
            ErrorKind::BadMerkleRoot => write!(f, "merkle root does not match the transactions"),
            ErrorKind::MutatedMerkleTree => {
                write!(f, "mutated merkle tree (duplicate transactions)")
            }
            ErrorKind::BadWitnessCommitment => write!(
                f,
                "witness commitment does not match the transactions' witness data (BIP 141)"
            ),
            ErrorKind::BadWitnessReservedValue => write!(
                f,
                "coinbase witness is not one 32-byte reserved value, as a witness commitment needs (BIP 141)"
            ),
            ErrorKind::UnexpectedWitness => write!(
                f,
                "witness data in a block without a witness commitment (BIP 141)"
            ),
            ErrorKind::WeightTooHigh { weight } => {
                write!(f, "block weight {weight} is above 4000000")
            }
            ErrorKind::BadProofOfWork => write!(f, "proof of work does not meet nBits"),
            ErrorKind::BadHex { text, expected_len } => {
                write!(
                    f,
                    "expected {expected_len} bytes of hexadecimal, got {text:?}"
                )
            }
            ErrorKind::UnknownNetwork { name } => write!(
                f,
                "unknown network {name:?} (expected main, testnet3, testnet4, signet or regtest)"
            ),
            ErrorKind::NetworkNotDetected => {
                write!(
                    f,
                    "no valid block record found to detect the network; pass --network"
                )
            }
            ErrorKind::BadXorFile { path, len } => {
                write!(
                    f,
                    "{} is {len} bytes, expected an 8-byte xor key",
                    path.display()
                )
            }
            ErrorKind::NoBlockFiles { path } => {
                write!(
                    f,
                    "{} is neither a block file nor a directory of blkNNNNN.dat files",
                    path.display()
                )
            }
            ErrorKind::TooManyFiles { value } => {
                write!(
                    f,
                    "too many files or file too large ({value}) for a block position"
                )
            }
            ErrorKind::BlockChanged { path, offset } => {
                write!(
                    f,
                    "block at offset {offset} of {} changed since the scan",
                    path.display()
                )
            }
            ErrorKind::OutputHoldsInput { dir, input } => write!(
                f,
                "output directory {} holds the input {}; write elsewhere (nothing was changed)",
                dir.display(),
                input.display()
            ),
            ErrorKind::OutputNotEmpty { dir } => write!(
                f,
                "output directory {} is not empty; name a new or empty one, or force replacing \
                 what an earlier linearize wrote there (nothing was changed)",
                dir.display()
            ),
            ErrorKind::OutputForeign { dir, file } => write!(
                f,
                "output directory {} holds {file}, which linearize did not write; \
                 refusing to mix block files (nothing was changed)",
                dir.display()
            ),
            ErrorKind::VarIntTooLarge { offset } => {
                write!(f, "VARINT too large for its type at offset {offset}")
            }
            ErrorKind::BadCompressedKey { offset } => write!(
                f,
                "compressed public key at offset {offset} is not on the secp256k1 curve"
            ),
            ErrorKind::AmountTooLarge { offset, value } => write!(
                f,
                "coin at offset {offset} has value {value}, above 21 million bitcoin"
            ),
            ErrorKind::NotASnapshot { found } => write!(
                f,
                "not a UTXO snapshot: starts with {}, expected 7574786fff (\"utxo\\xff\"; \
                 snapshots from Bitcoin Core before 28.0 have no magic and are not read)",
                Hex(found)
            ),
            ErrorKind::SnapshotVersion { version, supported } if version > supported => write!(
                f,
                "UTXO snapshot version {version} was made by a newer Bitcoin Core; \
                 this build reads version {supported}"
            ),
            ErrorKind::SnapshotVersion { version, supported } => write!(
                f,
                "unsupported UTXO snapshot version {version}; this build reads version \
                 {supported}"
            ),
            ErrorKind::SnapshotNetwork { magic } => write!(
                f,
                "UTXO snapshot for an unknown network (magic {})",
                Hex(magic)
            ),
            ErrorKind::CoinCount { declared, found } => write!(
                f,
                "UTXO snapshot declares {declared} coins but holds {found}"
            ),
            ErrorKind::SnapshotOrder { offset } => write!(
                f,
                "UTXO snapshot coins out of Core's order (or an empty txid group) at offset {offset}"
            ),
            ErrorKind::SnapshotTrailingBytes { offset } => {
                write!(
                    f,
                    "bytes after the UTXO snapshot's last coin at offset {offset}"
                )
            }
            ErrorKind::CoinOrder { index } => write!(
                f,
                "coin {index} does not come after the previous one in Core's order"
            ),
            ErrorKind::UnwritableCoin { index, reason } => {
                write!(f, "coin {index} cannot be in a UTXO snapshot: {reason}")
            }
            ErrorKind::NotConnected {
                hash,
                height,
                txid,
                reject,
            } => {
                write!(
                    f,
                    "block {} at height {height} does not connect: ",
                    Reversed(hash)
                )?;
                if let Some(txid) = txid {
                    write!(f, "transaction {}: ", Reversed(txid))?;
                }
                write!(f, "{reject}")
            }
            ErrorKind::HeightPastTip {
                height,
                tip: Some(tip),
            } => write!(f, "height {height} is past the best chain's tip at {tip}"),
            ErrorKind::HeightPastTip { height, tip: None } => write!(
                f,
                "no best chain to reach height {height} (genesis not found)"
            ),
            ErrorKind::UnparsableBlock {
                hash,
                height,
                detail,
            } => write!(
                f,
                "block {} at height {height} does not parse: {detail}",
                Reversed(hash)
            ),
            ErrorKind::BadTxIndex { path, offset, what } => write!(
                f,
                "{} is not a valid transaction index: {what} (offset {offset})",
                path.display()
            ),
            ErrorKind::TxIndexTooNew { path, version } => write!(
                f,
                "{} is a transaction index of version {version}, made by a newer seekless; \
                 rebuild it or upgrade",
                path.display()
            ),
            ErrorKind::BlockFileShorter {
                path,
                len,
                expected,
            } => write!(
                f,
                "block file {} is {len} bytes, shorter than the {expected} indexed: \
                 the block files changed since the index was built; rebuild it",
                path.display()
            ),
            ErrorKind::TxChanged { path, offset } => write!(
                f,
                "no indexed transaction at offset {offset} of {}: \
                 the block files changed since the index was built; rebuild it",
                path.display()
            ),
            ErrorKind::BadState { path, reason } => write!(
                f,
                "state file {}: {reason} (not rebuilt: remove the state directory to start over)",
                path.display()
            ),
            ErrorKind::StateInUse { path } => write!(
                f,
                "the state directory is in use by another run (lock {} held)",
                path.display()
            ),
            ErrorKind::StateTipUnknown { height, hash } => write!(
                f,
                "the state's tip {} at height {height} is not in the block files: \
                 give the files it was built from (or --height to go back)",
                Reversed(hash)
            ),
            ErrorKind::UndoTooShort { height, reach } => write!(
                f,
                "the state at height {height} must go back below height {reach}, \
                 as far as its undo data reaches (a deeper reorg or a lower --height \
                 than --undo-blocks allows); start a new state directory"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Bytes shown as lowercase hex.
struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

/// Result with this crate's error.
pub type Result<T> = std::result::Result<T, Error>;
