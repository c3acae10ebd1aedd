//! Have I Been Pwned password index.
#![deny(missing_docs)]
