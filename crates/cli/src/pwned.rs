use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print the index format version.
    Stats,
}

pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Stats => ExitCode::SUCCESS,
    }
}
