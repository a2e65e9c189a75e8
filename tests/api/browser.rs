//! A small Chrome DevTools Protocol driver for the console's browser tests: Debian's `chromium`
//! (which `.ci/run` installs) started headless with a fresh profile directory and
//! `--remote-debugging-pipe`, so the protocol runs over two pipes (the child's fds 3 and 4,
//! set up by `sh`) with no WebSocket and no extra crate. Every wait is bounded; the browser is
//! killed when the driver is dropped.
//!
//! Messages are JSON objects separated by NUL bytes. A reader thread parses them into a
//! channel; `call` sends a command to the page's session and waits for its answer, keeping the
//! page's exceptions and console errors, which `errors()` returns.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one protocol command may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// A headless Chromium with one page open.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    session: String,
    errors: Vec<String>,
    _profile: tempfile::TempDir,
}

/// The Chromium binary on PATH.
fn chromium() -> &'static str {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("the browser tests need Chromium: apt-get install chromium (.ci/run does)")
}

/// Splits the browser's output into JSON messages (NUL-separated) on a thread of its own.
fn read_messages(output: std::process::ChildStdout) -> Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(output);
        loop {
            let mut buf = Vec::new();
            match reader.read_until(0, &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if buf.last() == Some(&0) {
                buf.pop();
            }
            if let Ok(message) = serde_json::from_slice::<Value>(&buf) {
                if tx.send(message).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

impl Browser {
    /// Starts Chromium at `width` x `height` and attaches to a blank page.
    pub fn launch(width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().expect("a profile directory");
        let script = "exec \"$0\" \"$@\" 3<&0 4>&1 0</dev/null 1>/dev/null";
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(chromium())
            .args([
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--hide-scrollbars",
                "--mute-audio",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        let input = child.stdin.take().expect("a command pipe");
        let messages = read_messages(child.stdout.take().expect("an answer pipe"));
        let mut browser = Browser {
            child,
            input,
            messages,
            next_id: 0,
            session: String::new(),
            errors: Vec::new(),
            _profile: profile,
        };
        browser.attach(width, height);
        browser
    }

    /// Opens a page target, attaches to it and enables what the tests read.
    fn attach(&mut self, width: u32, height: u32) {
        let target = self.send(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = self.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        self.session = attached["sessionId"].as_str().expect("a session id").to_owned();
        self.call("Page.enable", json!({}));
        self.call("Runtime.enable", json!({}));
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Sends `method` (to the page's session unless `session` is None) and waits for its
    /// answer; panics on a protocol error or after `CALL_TIMEOUT`.
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("JSON");
        bytes.push(0);
        self.input.write_all(&bytes).expect("chromium reads its commands");
        self.input.flush().expect("chromium reads its commands");
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.messages.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer in {CALL_TIMEOUT:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("{method}: chromium exited"),
            };
            if message["id"] == json!(id) {
                if let Some(error) = message.get("error") {
                    panic!("{method} failed: {error}");
                }
                return message["result"].clone();
            }
            self.note_event(&message);
        }
    }

    /// Keeps the page's uncaught exceptions and console errors.
    fn note_event(&mut self, message: &Value) {
        match message["method"].as_str() {
            Some("Runtime.exceptionThrown") => {
                let details = &message["params"]["exceptionDetails"];
                let text = details["exception"]["description"]
                    .as_str()
                    .or(details["text"].as_str())
                    .unwrap_or("an exception");
                self.errors.push(text.to_owned());
            }
            Some("Runtime.consoleAPICalled") if message["params"]["type"] == "error" => {
                self.errors.push(message["params"]["args"].to_string());
            }
            _ => {}
        }
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// The page's uncaught exceptions and console errors so far.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
    }

    /// Evaluates `expression` in the page (promises awaited); its value as JSON. Panics with
    /// the page's exception when it throws.
    pub fn eval(&mut self, expression: &str) -> Value {
        let answer = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        if let Some(details) = answer.get("exceptionDetails") {
            panic!("{expression}\nthrew: {}", details["exception"]["description"]);
        }
        answer["result"]["value"].clone()
    }

    /// Polls `expression` until it is truthy (not null, false, 0 or ""); its value. Panics
    /// after `timeout` with the page's errors.
    pub fn wait_for(&mut self, expression: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        let guarded =
            format!("(() => {{ try {{ return ({expression}); }} catch {{ return null; }} }})()");
        loop {
            let value = self.eval(&guarded);
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!(0)
                && value != json!("");
            if truthy {
                return value;
            }
            if Instant::now() >= deadline {
                panic!("waited {timeout:?} for {expression}; page errors: {:?}", self.errors);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Types `text` into the focused element as the keyboard would (input events fire).
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Presses and releases one key (`Enter`, `Escape`, `ArrowDown`, `Tab`, `F2`, `a` ...),
    /// with `modifiers` (1 Alt, 2 Ctrl, 4 Meta, 8 Shift).
    pub fn press(&mut self, key: &str, modifiers: u32) {
        let (code, vk, text) = key_codes(key);
        let mut down = json!({"type": "keyDown", "key": key, "code": code,
            "windowsVirtualKeyCode": vk, "modifiers": modifiers});
        if let Some(text) = text {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down);
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk,
                "modifiers": modifiers}),
        );
    }

    /// A PNG of the page as shown, written to `path`.
    pub fn screenshot(&mut self, path: &std::path::Path) {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let data = shot["data"].as_str().expect("base64 PNG");
        std::fs::write(path, base64_decode(data)).expect("the screenshot is written");
    }

    /// With `GRIDD_CONSOLE_SCREENSHOTS=1`, a screenshot of the page as `docs/console/<name>`
    /// (the README shows them); otherwise nothing.
    pub fn docs_screenshot(&mut self, name: &str) {
        if std::env::var("GRIDD_CONSOLE_SCREENSHOTS").as_deref() != Ok("1") {
            return;
        }
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/console");
        std::fs::create_dir_all(&dir).expect("docs/console");
        self.screenshot(&dir.join(name));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// DOM `code`, Windows virtual key code and typed text of the keys the tests press.
fn key_codes(key: &str) -> (String, u32, Option<String>) {
    let named = match key {
        "Enter" => Some(("Enter", 13, Some("\r"))),
        "Escape" => Some(("Escape", 27, None)),
        "Tab" => Some(("Tab", 9, None)),
        "Backspace" => Some(("Backspace", 8, None)),
        "Delete" => Some(("Delete", 46, None)),
        "ArrowLeft" => Some(("ArrowLeft", 37, None)),
        "ArrowUp" => Some(("ArrowUp", 38, None)),
        "ArrowRight" => Some(("ArrowRight", 39, None)),
        "ArrowDown" => Some(("ArrowDown", 40, None)),
        "PageUp" => Some(("PageUp", 33, None)),
        "PageDown" => Some(("PageDown", 34, None)),
        "End" => Some(("End", 35, None)),
        "Home" => Some(("Home", 36, None)),
        "F2" => Some(("F2", 113, None)),
        "F10" => Some(("F10", 121, None)),
        _ => None,
    };
    if let Some((code, vk, text)) = named {
        return (code.to_owned(), vk, text.map(str::to_owned));
    }
    assert_eq!(key.chars().count(), 1, "add the key {key} to key_codes");
    let c = key.chars().next().expect("a key");
    let upper = c.to_ascii_uppercase();
    (format!("Key{upper}"), upper as u32, Some(key.to_owned()))
}

/// Standard base64 (the screenshot's encoding) to bytes.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn base64_decodes() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGk="), b"hi");
}
