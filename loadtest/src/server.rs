//! Starting a gridd for a run and stopping it: the binary (the release build beside loadtest,
//! brought up to date with cargo, unless `--server-bin` names one) on port 0 with a temporary
//! data directory and its own owner key; its log goes to `server.log` in that directory.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::Rng;
use regex::Regex;

use crate::LoadError;

/// A running gridd; killed when dropped if not stopped.
#[derive(Debug)]
pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub key: String,
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts `bin` (or the default build) with `args` after loadtest's own, and waits for the
    /// address it logs.
    pub fn start(
        bin: Option<&Path>,
        key: Option<&str>,
        args: &[String],
    ) -> Result<Server, LoadError> {
        let bin = match bin {
            Some(bin) => bin.to_owned(),
            None => default_binary()?,
        };
        let dir =
            tempfile::Builder::new().prefix("gridd-loadtest-").tempdir().map_err(|source| {
                LoadError::Io { context: "temporary data directory".into(), source }
            })?;
        let key = key.map_or_else(
            || format!("loadtest-{:032x}", rand::thread_rng().gen::<u128>()),
            str::to_owned,
        );
        // The address is read from gridd's "listening" line: keep gridd's info lines unless
        // the caller chose a log level.
        let chose_level = args.iter().any(|a| a.starts_with("--log-level"));
        let level: &[&str] = if chose_level { &[] } else { &["--log-level", "gridd=info,warn"] };
        let mut child = Command::new(&bin)
            .args(["--bind", "127.0.0.1:0"])
            .args(level)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--api-key", &key])
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| LoadError::Io {
                context: format!("starting {}", bin.display()),
                source,
            })?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let log_path = dir.path().join("server.log");
        let mut log = std::fs::File::create(&log_path)
            .map_err(|source| LoadError::Io { context: log_path.display().to_string(), source })?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let address = Regex::new(r"addr\S*=\S*?(127\.0\.0\.1:\d+)").expect("valid regex");
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("gridd listening") {
                    if let Some(found) = address.captures(&line) {
                        let _ = tx.send(found[1].to_owned());
                    }
                }
                let _ = writeln!(log, "{line}");
            }
        });
        let mut server = Server { child: Some(child), base: String::new(), key, dir };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => server.base = format!("http://{addr}"),
            Err(_) => {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                return Err(LoadError::Server(format!(
                    "{} did not report its address; its log:\n{log}",
                    bin.display()
                )));
            }
        }
        Ok(server)
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Where the server's data and log are.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server with SIGTERM (it finishes requests and writes snapshots) and waits;
    /// kills it after 60 s.
    pub fn stop(mut self) -> Result<(), LoadError> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        for _ in 0..600 {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Err(source) => {
                    return Err(LoadError::Io { context: "waiting for gridd".into(), source })
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(LoadError::Server("gridd did not stop within 60 s of SIGTERM; killed".into()))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The release `gridd` of the target directory this program was built in, after
/// `cargo build --release -p gridd` (a no-op when it is up to date; skipped when cargo is not
/// there and the binary is).
fn default_binary() -> Result<PathBuf, LoadError> {
    let exe = std::env::current_exe()
        .map_err(|source| LoadError::Io { context: "locating loadtest".into(), source })?;
    let target_dir = exe.parent().and_then(Path::parent).ok_or_else(|| {
        LoadError::Server(format!("{} is not in a cargo target directory", exe.display()))
    })?;
    let bin = target_dir.join("release").join("gridd");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let built = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "-p", "gridd", "--bin", "gridd", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .status();
    match built {
        Ok(status) if status.success() => {}
        Ok(status) => {
            return Err(LoadError::Server(format!("cargo build --release -p gridd: {status}")))
        }
        Err(_) if bin.exists() => {}
        Err(source) => return Err(LoadError::Io { context: "running cargo".into(), source }),
    }
    if !bin.exists() {
        return Err(LoadError::Server(format!(
            "no gridd at {}; build it with `cargo build --release` or pass --server-bin",
            bin.display()
        )));
    }
    Ok(bin)
}

/// CPU time (user + system, seconds) a process has used so far, from `/proc/<pid>/stat`; `None`
/// where there is no such file.
pub fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the parenthesized command name start at field 3; utime and stime are 14, 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let per_second =
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100);
    Some(ticks / per_second as f64)
}

/// Jiffies of the whole machine so far, from `/proc/stat`: (stolen by the hypervisor, total).
pub fn machine_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal guest guest_nice; guests are in user.
    let total = fields.iter().take(8).sum();
    Some((*fields.get(7)?, total))
}
