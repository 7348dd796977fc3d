//! A minimal Chrome DevTools Protocol client for the report's browser
//! checks: headless Chromium (Debian's `chromium`) driven over
//! `--remote-debugging-pipe` (commands on its fd 3, answers and events on
//! its fd 4, each a JSON document ended by a NUL byte).
//!
//! Why the protocol, and why the pipe: `--dump-dom` shows neither console
//! messages nor requests reliably (its logging is the browser's, mixed with
//! its own noise), while the protocol reports every request the page makes
//! (`Network.requestWillBeSent`) and every console message, page exception
//! and browser log entry (CSP refusals included) as typed events of that
//! page's session. The pipe needs no debugging port: nothing listens, and no
//! port can be taken by another process. The browser runs with a proxy that
//! refuses every connection (`127.0.0.1:9`), so a request that slipped
//! through would fail here rather than leave the machine.

use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long one command may wait for its answer: a guard against a hung
/// browser, never a timing assertion.
const ANSWER_WITHIN: Duration = Duration::from_secs(180);

/// What loading one page observed.
pub struct Loaded {
    /// What [`STRUCTURE_JS`] read from the rendered DOM.
    pub dom: Value,
    /// Console errors, uncaught exceptions and error log entries (a CSP
    /// refusal is one), as text.
    pub errors: Vec<String>,
    /// The URL of every request the page made, its own navigation included;
    /// one the browser refused before sending it is `<url> (blocked:
    /// <reason>)` (`Network.loadingFailed`'s `blockedReason`, `csp` for the
    /// page's Content-Security-Policy).
    pub requests: Vec<String>,
    /// From `Page.navigate` to `Page.loadEventFired`, in milliseconds
    /// (recorded, never asserted).
    pub load_ms: u128,
    /// A PNG of the viewport.
    pub screenshot: Vec<u8>,
}

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    commands: File,
    messages: Receiver<Value>,
    next_id: u64,
    events: Vec<Value>,
    profile: tempfile::TempDir,
}

/// The structure the checks read from a rendered report: verdict words,
/// the matrix (a row per candidate: its header text, verdict, placement and
/// a cell per gate), failures, digests, the timeline, and layout facts.
pub const STRUCTURE_JS: &str = r#"JSON.stringify({
  verdict: document.querySelector('h1 .verdict')?.textContent,
  badge: [...document.querySelectorAll('h1 .verdict')].flatMap(e => {
    const s = getComputedStyle(e); return [s.color, s.backgroundColor]; }),
  run: document.querySelector('[data-run-verdict]')?.textContent,
  gates: [...document.querySelectorAll('table.matrix th.gate')].map(th => th.dataset.gate),
  rows: [...document.querySelectorAll('table.matrix tbody tr')].map(tr => ({
    candidate: tr.dataset.candidate,
    header: tr.querySelector('th').textContent,
    verdict: tr.querySelector('[data-verdict]')?.dataset.verdict,
    verdictText: tr.querySelector('[data-verdict]')?.textContent,
    placement: tr.querySelector('[data-placement]')?.dataset.placement,
    cells: Object.fromEntries([...tr.querySelectorAll('td[data-gate]')]
      .map(td => [td.dataset.gate, td.textContent]))
  })),
  failures: [...document.querySelectorAll('article.failure')].map(a => ({
    gate: a.dataset.gate, check: a.dataset.check, candidate: a.dataset.candidate,
    consequences: a.querySelectorAll('details.consequences li').length
  })),
  normalized: [...document.querySelectorAll('[data-normalized]')].map(e => e.textContent),
  spans: document.querySelectorAll('#timeline details.span:not(.outside)').length,
  steps: document.querySelectorAll('#timeline ol.steps li').length,
  scripts: document.scripts.length,
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth: window.innerWidth,
  bytes: document.documentElement.outerHTML.length
})"#;

/// Two pipes with close-on-exec set: (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`, which we own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Browser {
    /// Starts `chromium` headless, driven over the pipe.
    pub fn launch(chromium: &Path) -> Browser {
        let (child_reads, commands) = pipe();
        let (messages, child_writes) = pipe();
        let profile = tempfile::tempdir().expect("a profile folder");
        let log = File::create(profile.path().join("chromium.log")).expect("a log file");
        let (r, w) = (child_reads.as_raw_fd(), child_writes.as_raw_fd());
        let mut cmd = Command::new(chromium);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            "--window-size=1280,900",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log);
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork
        // and exec. Both ends go above fd 10 first, so neither dup2 onto 3
        // or 4 overwrites the other's source; dup2 clears close-on-exec on
        // 3 and 4 only.
        unsafe {
            cmd.pre_exec(move || {
                let r2 = libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        drop((child_reads, child_writes));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(File::from(messages));
            let mut buf = Vec::new();
            while reader.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        Browser {
            child,
            commands: File::from(commands),
            messages: rx,
            next_id: 0,
            events: Vec::new(),
            profile,
        }
    }

    /// Chromium's own output so far (for a failure message).
    fn log(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("chromium.log")).unwrap_or_default()
    }

    /// Sends `method` (to `session`, or the browser) and returns its result,
    /// keeping every event that arrives meanwhile.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("a command serialises");
        bytes.push(0);
        if let Err(e) = self.commands.write_all(&bytes) {
            panic!(
                "{method}: cannot write to chromium: {e}; its log:\n{}",
                self.log()
            );
        }
        loop {
            let m = self.next_message(method);
            if m["id"] == id {
                assert!(m.get("error").is_none(), "{method}: {m}");
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    fn next_message(&mut self, waiting_for: &str) -> Value {
        match self.messages.recv_timeout(ANSWER_WITHIN) {
            Ok(m) => m,
            Err(e) => panic!(
                "no message from chromium while waiting for {waiting_for} ({e}); its log:\n{}",
                self.log()
            ),
        }
    }

    /// Waits for event `method` of `session`, received since index `since`.
    fn wait_for(&mut self, method: &str, session: &str, since: usize) {
        let is = |m: &Value| m["method"] == method && m["sessionId"] == session;
        if self.events[since..].iter().any(is) {
            return;
        }
        loop {
            let m = self.next_message(method);
            let done = is(&m);
            self.events.push(m);
            if done {
                return;
            }
        }
    }

    /// Loads `file` in a new tab and reads what it rendered, logged and
    /// requested.
    pub fn load(&mut self, file: &Path) -> Loaded {
        let url = format!("file://{}", file.display());
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        let session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            self.call(Some(&session), domain, json!({}));
        }
        let since = self.events.len();
        let started = Instant::now();
        self.call(Some(&session), "Page.navigate", json!({ "url": url }));
        self.wait_for("Page.loadEventFired", &session, since);
        let load_ms = started.elapsed().as_millis();
        let read = self.call(
            Some(&session),
            "Runtime.evaluate",
            json!({ "expression": STRUCTURE_JS, "returnByValue": true }),
        );
        let text = read["result"]["value"]
            .as_str()
            .unwrap_or_else(|| panic!("{read}"));
        let dom: Value = serde_json::from_str(text).expect("the structure is JSON");
        let shot = self.call(
            Some(&session),
            "Page.captureScreenshot",
            json!({ "format": "png" }),
        );
        use base64::Engine as _;
        let screenshot = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 PNG");
        self.call(None, "Target.closeTarget", json!({ "targetId": target }));
        let (errors, requests) = observed(&self.events[since..], &session);
        Loaded {
            dom,
            errors,
            requests,
            load_ms,
            screenshot,
        }
    }
}

/// The errors and request URLs among `events` of `session`.
fn observed(events: &[Value], session: &str) -> (Vec<String>, Vec<String>) {
    let (mut errors, mut requests) = (Vec::new(), Vec::new());
    let ours = || events.iter().filter(|e| e["sessionId"] == session);
    let blocked: std::collections::BTreeMap<String, String> = ours()
        .filter(|e| e["method"] == "Network.loadingFailed")
        .filter_map(|e| {
            let reason = e["params"]["blockedReason"].as_str()?;
            Some((
                e["params"]["requestId"].as_str()?.to_string(),
                reason.to_string(),
            ))
        })
        .collect();
    for e in ours() {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or_default() {
            "Runtime.consoleAPICalled"
                if matches!(p["type"].as_str(), Some("error" | "assert")) =>
            {
                errors.push(format!("console: {}", p["args"]))
            }
            "Runtime.exceptionThrown" => {
                errors.push(format!("exception: {}", p["exceptionDetails"]))
            }
            "Log.entryAdded" if p["entry"]["level"] == "error" => {
                errors.push(format!("log: {}", p["entry"]))
            }
            "Network.requestWillBeSent" => {
                let url = p["request"]["url"].as_str().unwrap_or_default();
                requests.push(
                    match p["requestId"].as_str().and_then(|id| blocked.get(id)) {
                        Some(reason) => format!("{url} (blocked: {reason})"),
                        None => url.to_string(),
                    },
                )
            }
            _ => {}
        }
    }
    (errors, requests)
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .commands
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Chromium: `$CHROMIUM`, else Debian's `/usr/bin/chromium`. `None` (with a
/// notice on stderr, past the test harness's capture) where there is none,
/// except under CI (`CI` set), where `.ci/run` installs it: there its
/// absence fails the test.
pub fn chromium(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("CHROMIUM")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        });
    if found.is_none() {
        let notice = format!(
            "{test}: Chromium not found ($CHROMIUM, /usr/bin/chromium): the browser checks of \
             report.html are SKIPPED; install it (Debian: apt-get install chromium) to run them"
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "{notice} (CI: .ci/run installs it)"
        );
        let _ = writeln!(std::io::stderr(), "SKIPPED {notice}");
    }
    found
}
