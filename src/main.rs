//! The `gridd` binary: `serve` (the default) runs the server; `keys` and `companies` do what the
//! admin API does, on a data directory whose server is not running.

use std::io::IsTerminal;

use clap::{Parser, Subcommand};

use gridd::Config;

mod cli;

/// mimalloc rather than glibc's allocator: listings allocate a page's values on the grid actor's
/// thread and free them on an HTTP worker's, which glibc handles with arena locking and
/// consolidation (a quarter of a page read's CPU in `perf`). Built without transparent huge
/// pages (`no_thp`): every first touch of a huge page zeroes 2 MiB, which was half of a 1M-record
/// restart's CPU in `perf` (`clear_page_erms`), and huge pages kept partly used stay resident.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "gridd",
    version,
    about = "A self-hosted data grid server speaking the Gridly REST API"
)]
struct Cli {
    #[command(flatten)]
    config: Config,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Manage API keys on the data directory.
    #[command(subcommand)]
    Keys(cli::KeysCommand),
    /// Manage companies on the data directory.
    #[command(subcommand)]
    Companies(cli::CompaniesCommand),
}

fn main() -> std::process::ExitCode {
    let args = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&args.config.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log line that cannot be written (stderr closed) is dropped: reporting it would panic
    // the thread that logged, e.g. the one that handles SIGTERM.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a terminal: a log file or journal gets plain text, and formatting
        // each request span's fields in colour was a fifteenth of a small request's work.
        .with_ansi(std::io::stderr().is_terminal())
        .log_internal_errors(false)
        .init();
    let result = match args.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(args.config),
        Command::Keys(cmd) => {
            cli::run(args.config, cli::AdminCommand::Keys(cmd)).map_err(Into::into)
        }
        Command::Companies(cmd) => {
            cli::run(args.config, cli::AdminCommand::Companies(cmd)).map_err(Into::into)
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            tracing::error!("{message}");
            eprintln!("gridd: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Serves until SIGTERM or Ctrl-C; the error is why it could not start or stopped early.
fn serve(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    actix_web::rt::System::new().block_on(async move {
        let app = gridd::Application::build(config).await?;
        app.run_until_stopped().await?;
        Ok(())
    })
}
