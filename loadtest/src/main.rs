//! `cargo run --release -p loadtest -- --help`: runs a load test and prints its table; exits 2
//! when requests failed outside step mode (where failing is how a step ends), 1 when the run
//! could not be made.

#![allow(clippy::print_stdout)]

use clap::Parser;
use loadtest::Options;

fn main() -> std::process::ExitCode {
    let options = Options::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.threads.max(1))
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("loadtest: cannot start the runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match runtime.block_on(loadtest::run(&options)) {
        Ok(report) => {
            println!("{}", report.table());
            if !options.step && report.total_errors() > 0 {
                return std::process::ExitCode::from(2);
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadtest: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
