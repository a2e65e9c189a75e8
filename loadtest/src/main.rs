//! `cargo run --release -p loadtest -- --help`: runs a load test and prints its table; exits 2
//! when requests failed outside step mode (where failing is how a step ends), 1 when the run
//! could not be made, 130 when interrupted (Ctrl-C or SIGTERM; a started server is stopped).

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
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = loadtest::run(&options) => Some(result),
            () = interrupted() => None,
        }
    });
    let Some(outcome) = outcome else {
        eprintln!("loadtest: interrupted");
        return std::process::ExitCode::from(130);
    };
    match outcome {
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

/// Resolves on Ctrl-C or SIGTERM. The run is then dropped, which kills a server it started.
async fn interrupted() {
    let ctrl_c = tokio::signal::ctrl_c();
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = ctrl_c.await;
        }
    }
}
