//! A small WebDriver BiDi driver for the console's Firefox test: Debian's `firefox-esr` (which
//! `.ci/run` installs when missing) started headless with a fresh profile and
//! `--remote-debugging-port`, its BiDi endpoint (`ws://127.0.0.1:<port>/session`) driven over a
//! WebSocket. Firefox speaks WebDriver BiDi itself, so no geckodriver is needed. Every wait is
//! bounded; the browser is killed when the driver is dropped.
//!
//! `eval` runs an expression in the page and answers its value through `JSON.stringify`;
//! keys are real key events (`input.performActions`); the page's console errors and uncaught
//! exceptions (`log.entryAdded` at level `error`) are kept for `errors()`.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

/// How long one protocol command may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// How long Firefox may take to start and open its BiDi endpoint.
const START_TIMEOUT: Duration = Duration::from_secs(40);

/// Profile preferences: no first-run pages, updates, telemetry or background connections (the
/// machine's network is closed).
const PREFS: &str = r#"
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("browser.aboutwelcome.enabled", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("app.update.disabledForTesting", true);
user_pref("extensions.update.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("remote.prefs.recommended", true);
"#;

/// A headless Firefox with one tab open.
pub struct Firefox {
    child: Child,
    socket: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    context: String,
    errors: Vec<String>,
    _profile: tempfile::TempDir,
}

/// The Firefox binary on PATH.
fn firefox() -> &'static str {
    ["firefox-esr", "firefox"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("the Firefox test needs Firefox: apt-get install firefox-esr (.ci/run does)")
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

/// Connects to the BiDi endpoint once Firefox has opened it.
fn connect(port: u16, child: &mut Child) -> WebSocket<MaybeTlsStream<TcpStream>> {
    let started = Instant::now();
    loop {
        if let Ok((socket, _)) = tungstenite::connect(format!("ws://127.0.0.1:{port}/session")) {
            if let MaybeTlsStream::Plain(stream) = socket.get_ref() {
                stream.set_read_timeout(Some(CALL_TIMEOUT)).expect("a read timeout");
            }
            return socket;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("Firefox exited before its BiDi endpoint opened: {status}");
        }
        assert!(started.elapsed() < START_TIMEOUT, "Firefox's BiDi endpoint did not open");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The WebDriver key value of a key name (`"Enter"`, `"ArrowDown"`, ...) or a character.
fn key_value(key: &str) -> String {
    let code = match key {
        "Enter" => '\u{E007}',
        "Escape" => '\u{E00C}',
        "Tab" => '\u{E004}',
        "Home" => '\u{E011}',
        "ArrowLeft" => '\u{E012}',
        "ArrowUp" => '\u{E013}',
        "ArrowRight" => '\u{E014}',
        "ArrowDown" => '\u{E015}',
        "Control" => '\u{E009}',
        "Shift" => '\u{E008}',
        _ => return key.to_owned(),
    };
    code.to_string()
}

impl Firefox {
    /// Starts Firefox headless at `width` x `height` and opens a session on its first tab.
    pub fn launch(width: u32, height: u32) -> Firefox {
        let profile = tempfile::tempdir().expect("a profile directory");
        std::fs::write(profile.path().join("user.js"), PREFS).expect("the profile's prefs");
        let port = free_port();
        let mut child = Command::new(firefox())
            .args(["--headless", "--no-remote", "--profile"])
            .arg(profile.path())
            .args(["--remote-debugging-port", &port.to_string()])
            .args(["--width", &width.to_string(), "--height", &height.to_string()])
            .arg("about:blank")
            .env("MOZ_HEADLESS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Firefox starts");
        let socket = connect(port, &mut child);
        let mut firefox = Firefox {
            child,
            socket,
            next_id: 0,
            context: String::new(),
            errors: Vec::new(),
            _profile: profile,
        };
        firefox.call("session.new", json!({"capabilities": {}}));
        firefox.call("session.subscribe", json!({"events": ["log.entryAdded"]}));
        let tree = firefox.call("browsingContext.getTree", json!({}));
        let context = tree["contexts"][0]["context"].as_str().expect("a tab").to_owned();
        firefox.context = context;
        firefox
    }

    /// Sends `method` and waits for its result (panics on an error answer or a timeout).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        self.socket.send(Message::text(message)).expect("the command is sent");
        let started = Instant::now();
        loop {
            assert!(started.elapsed() < CALL_TIMEOUT, "{method} got no answer");
            let text = match self.socket.read().expect("an answer from Firefox") {
                Message::Text(text) => text,
                _ => continue,
            };
            let answer: Value = serde_json::from_str(text.as_str()).expect("JSON from Firefox");
            if answer["method"] == "log.entryAdded" && answer["params"]["level"] == "error" {
                self.errors.push(answer["params"]["text"].as_str().unwrap_or_default().to_owned());
                continue;
            }
            if answer["id"] != json!(id) {
                continue;
            }
            assert_ne!(answer["type"], "error", "{method} failed: {answer}");
            return answer["result"].clone();
        }
    }

    /// Opens `url` and waits until it has loaded.
    pub fn goto(&mut self, url: &str) {
        let context = self.context.clone();
        self.call(
            "browsingContext.navigate",
            json!({"context": context, "url": url, "wait": "complete"}),
        );
    }

    /// The value of `expression` in the page (awaited when it is a promise), through JSON.
    pub fn eval(&mut self, expression: &str) -> Value {
        let wrapped = format!("(async () => JSON.stringify(await ({expression})))()");
        let context = self.context.clone();
        let result = self.call(
            "script.evaluate",
            json!({"expression": wrapped, "target": {"context": context}, "awaitPromise": true}),
        );
        assert_ne!(result["type"], "exception", "{expression} threw: {result}");
        match result["result"]["value"].as_str() {
            Some(text) => serde_json::from_str(text).unwrap_or(Value::Null),
            None => Value::Null,
        }
    }

    /// Waits until `condition` is truthy in the page.
    #[track_caller]
    pub fn wait_for(&mut self, condition: &str, timeout: Duration) {
        let started = Instant::now();
        while self.eval(&format!("Boolean({condition})")) != json!(true) {
            assert!(started.elapsed() < timeout, "timed out waiting for {condition}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Presses `keys` together (modifiers first), then lets them go.
    pub fn press(&mut self, keys: &[&str]) {
        let mut actions: Vec<Value> =
            keys.iter().map(|k| json!({"type": "keyDown", "value": key_value(k)})).collect();
        actions.extend(keys.iter().rev().map(|k| json!({"type": "keyUp", "value": key_value(k)})));
        self.key_actions(actions);
    }

    /// Types `text` one character at a time.
    pub fn type_text(&mut self, text: &str) {
        let actions = text
            .chars()
            .flat_map(|c| {
                let value = c.to_string();
                [
                    json!({"type": "keyDown", "value": value}),
                    json!({"type": "keyUp", "value": value}),
                ]
            })
            .collect();
        self.key_actions(actions);
    }

    fn key_actions(&mut self, actions: Vec<Value>) {
        let context = self.context.clone();
        let keyboard = json!({"type": "key", "id": "keyboard", "actions": actions});
        self.call("input.performActions", json!({"context": context, "actions": [keyboard]}));
    }

    /// The page's console errors and uncaught exceptions so far.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }
}

impl Drop for Firefox {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
