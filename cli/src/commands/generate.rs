//! `zoolock completions SHELL` and `zoolock man`: generated from the clap
//! definitions, so they never drift from the real command line.

use std::io::Write;

use clap::CommandFactory;

use crate::args::Cli;
use crate::exit::{self, Failure, Outcome};

/// Prints the completion script for `shell` on stdout.
pub(super) fn completions(shell: clap_complete::Shell) -> Outcome {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "zoolock", &mut out);
    emit(&out)
}

/// Prints the manual page (roff, section 1) on stdout: zoolock(1), or
/// zoolock-SUBCOMMAND(1) for one subcommand with all its options.
pub(super) fn man(subcommand: Option<&str>) -> Outcome {
    let mut cli = Cli::command();
    // Propagates the global options into the subcommands.
    cli.build();
    let man = match subcommand {
        None => clap_mangen::Man::new(cli),
        Some(name) => {
            let Some(sub) = cli.find_subcommand(name) else {
                let names: Vec<_> = cli.get_subcommands().map(|c| c.get_name().to_owned()).collect();
                return Err(Failure::new(exit::USAGE, format!("no subcommand {name:?}; one of: {}", names.join(", "))));
            };
            let title = format!("zoolock-{}", sub.get_name());
            clap_mangen::Man::new(sub.clone()).title(title)
        }
    };
    let mut out = Vec::new();
    man.source(concat!("zoolock ", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .map_err(|e| Failure::new(exit::FAILURE, format!("cannot render the manual page: {e}")))?;
    emit(&out)
}

fn emit(bytes: &[u8]) -> Outcome {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure::new(exit::FAILURE, format!("cannot write to stdout: {e}")))?;
    Ok(0)
}
