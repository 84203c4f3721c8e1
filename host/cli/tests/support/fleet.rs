//! A fleet of `toolhost serve --http` replicas behind a real HAProxy, and a
//! std-only stateless MCP client to drive it: shared by the tests and
//! `benches/team.rs`. The real parts come from `tests/team/install.sh`.

use super::{TOOLHOST, free_port, repo_root, run_script_once, succeeded};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where `tests/team/install.sh` puts the npm and PyPI parts.
pub fn team_dir() -> PathBuf {
    std::env::var_os("TOOLHOST_TEAM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/team"))
}

/// Runs `tests/team/install.sh` once per process.
pub fn install() {
    run_script_once(
        "tests/team/install.sh",
        &[("TOOLHOST_TEAM_DIR", &team_dir())],
    );
}

/// `haproxy`, from `PATH` or `/usr/sbin`.
fn haproxy_bin() -> PathBuf {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join("haproxy");
        if p.is_file() {
            return p;
        }
    }
    PathBuf::from("/usr/sbin/haproxy")
}

/// One `toolhost serve --http` process, its stderr kept, killed when
/// dropped.
pub struct Replica {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:PORT` (without `/mcp`).
    pub base: String,
    /// The MCP endpoint, `BASE/mcp`.
    pub url: String,
    /// The port it listens on.
    pub port: u16,
    stderr: Arc<Mutex<String>>,
}

impl Replica {
    /// Starts `toolhost serve --http 127.0.0.1:0 ARGS…` in `dir` with
    /// `home` as its home, and waits until it listens and is ready.
    pub fn start(dir: &Path, home: &Path, args: &[String]) -> Replica {
        Replica::start_at(dir, home, "127.0.0.1:0", args)
    }

    /// As [`start`](Self::start), listening at `bind`.
    pub fn start_at(dir: &Path, home: &Path, bind: &str, args: &[String]) -> Replica {
        Replica::start_with(dir, home, bind, args, &[])
    }

    /// As [`start_at`](Self::start_at), with `env` set for it.
    pub fn start_with(
        dir: &Path,
        home: &Path,
        bind: &str,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Replica {
        let mut cmd = Command::new(TOOLHOST);
        cmd.arg("serve")
            .args(["--http", bind])
            .args(args)
            .envs(env.iter().copied())
            .env("HOME", home)
            .env_remove("XDG_CACHE_HOME")
            .current_dir(dir);
        let r = Replica::spawn(cmd, Duration::from_secs(120));
        let deadline = Instant::now() + Duration::from_secs(120);
        while get(r.port, "/readyz").map(|(s, _)| s) != Some(200) {
            assert!(Instant::now() < deadline, "not ready:\n{}", r.stderr());
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }

    /// Spawns `cmd`, a `toolhost serve --http …`, and waits up to `within`
    /// for the endpoint it announces on stderr (not for it to be ready).
    pub fn spawn(mut cmd: Command, within: Duration) -> Replica {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning toolhost serve --http");
        let pipe = child.stderr.take().expect("stderr piped");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split("toolhost: serving MCP at ").nth(1) {
                    let _ = tx.send(url.trim().to_owned());
                }
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        let url = rx.recv_timeout(within).unwrap_or_else(|_| {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "toolhost serve --http printed no `serving MCP at` line within {within:?}; stderr:\n{}",
                stderr.lock().map(|s| s.clone()).unwrap_or_default()
            )
        });
        let base = url.trim_end_matches("/mcp").to_owned();
        let port = base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected endpoint {url}"));
        assert_ne!(port, 0);
        Replica {
            child,
            base,
            url,
            port,
            stderr,
        }
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Its resident set size now, in KiB.
    pub fn rss_kib(&self) -> u64 {
        rss_kib(self.child.id())
    }

    /// SIGKILL, at once.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A process's CPU time so far (user + system), in microseconds.
pub fn cpu_us(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command name (which may hold spaces, in parentheses).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime: fields 14 and 15, 12 and 13 after the name; in
    // clock ticks of 1/100 s on Linux.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) * 10_000
}

/// A process's resident set size, in KiB (0 when it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// `haproxy` in front of some replicas: round-robin, no stickiness, health
/// checks on `/readyz`, connection failures retried on another replica
/// (the request never reached one, so that is safe). Killed when dropped.
pub struct Haproxy {
    child: Child,
    /// The port clients connect to.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts it over `backends` (ports on 127.0.0.1).
    pub fn start(backends: &[u16]) -> Haproxy {
        let dir = tempfile::tempdir().expect("tmp");
        let port = free_port();
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!("    server r{i} 127.0.0.1:{p} check inter 200ms fall 1 rise 2\n")
            })
            .collect();
        let config = format!(
            "global\n\
             \x20   maxconn 4096\n\
             defaults\n\
             \x20   mode http\n\
             \x20   timeout connect 2s\n\
             \x20   timeout client 60s\n\
             \x20   timeout server 60s\n\
             \x20   retries 3\n\
             \x20   option redispatch 1\n\
             \x20   retry-on conn-failure\n\
             frontend mcp\n\
             \x20   bind 127.0.0.1:{port}\n\
             \x20   default_backend replicas\n\
             backend replicas\n\
             \x20   balance roundrobin\n\
             \x20   option httpchk GET /readyz\n\
             \x20   http-reuse safe\n\
             {servers}"
        );
        let cfg = dir.path().join("haproxy.cfg");
        std::fs::write(&cfg, config).expect("write haproxy.cfg");
        let check = Command::new(haproxy_bin())
            .args(["-c", "-q", "-f"])
            .arg(&cfg)
            .output()
            .expect("haproxy -c");
        succeeded(&check, "haproxy -c (checking its config)");
        let child = Command::new(haproxy_bin())
            .args(["-db", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning haproxy");
        let h = Haproxy {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while get(port, "/readyz").map(|(s, _)| s) != Some(200) {
            assert!(Instant::now() < deadline, "haproxy did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
        h
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on a loopback port: status and body.
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut r = BufReader::new(s);
    let (status, body) = read_response(&mut r).ok()?;
    Some((status, body))
}

/// Reads one HTTP/1.1 response: status and body (chunked or sized, or to
/// the end when neither).
fn read_response(r: &mut impl BufRead) -> std::io::Result<(u16, String)> {
    read_response_with(r).map(|(s, _, b)| (s, b))
}

/// As [`read_response`], with the `WWW-Authenticate` header's value.
fn read_response_with(r: &mut impl BufRead) -> std::io::Result<(u16, Option<String>, String)> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_owned());
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed before a response",
        ));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status"))?;
    let mut length = None;
    let mut chunked = false;
    let mut challenge = None;
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').ok_or_else(|| bad("bad header"))?;
        let k = k.trim().to_ascii_lowercase();
        if k == "content-length" {
            length = v.trim().parse::<usize>().ok();
        } else if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        } else if k == "www-authenticate" {
            challenge = Some(v.trim().to_owned());
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                line.clear();
                r.read_line(&mut line)?;
                break;
            }
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk)?;
            chunk.truncate(size);
            body.extend_from_slice(&chunk);
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
    }
    Ok((
        status,
        challenge,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// POSTs a stateless `method` request to `/mcp` with `headers`: status,
/// `WWW-Authenticate`, body.
pub fn post_raw(port: u16, headers: &[(&str, &str)], body: &str) -> (u16, Option<String>, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    read_response_with(&mut BufReader::new(s)).expect("a response")
}

/// oidc-provider on a loopback port (`tests/team/oidc.mjs`), killed when dropped.
pub struct Oidc {
    child: Child,
    /// Its issuer identifier.
    pub issuer: String,
}

impl Oidc {
    /// Starts it issuing tokens for `resource`.
    pub fn start(resource: &str) -> Oidc {
        let dir = team_dir();
        std::fs::copy(
            repo_root().join("tests/team/oidc.mjs"),
            dir.join("oidc.mjs"),
        )
        .expect("copy oidc.mjs next to its node_modules");
        let port = free_port();
        let mut child = Command::new("node")
            .arg(dir.join("oidc.mjs"))
            .arg(port.to_string())
            .arg(resource)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node (tests/team/install.sh installs oidc-provider)");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(i) = line.strip_prefix("issuer ") {
                    let _ = tx.send(i.to_owned());
                }
            }
        });
        let issuer = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("oidc-provider did not start");
        Oidc { child, issuer }
    }

    /// A token from the client-credentials grant of `client` for `resource`.
    pub fn token(&self, client: &str, secret: &str, scope: &str, resource: &str) -> String {
        let port: u16 = self
            .issuer
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        let body = format!(
            "grant_type=client_credentials&scope={}&resource={}",
            scope.replace(' ', "%20").replace(':', "%3A"),
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        use base64::Engine as _;
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:{secret}"));
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(
            s,
            "POST /token HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {basic}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let (status, text) = read_response(&mut BufReader::new(s)).expect("token response");
        assert_eq!(status, 200, "{text}");
        let v: Value = serde_json::from_str(&text).expect("json");
        v["access_token"].as_str().expect("access_token").to_owned()
    }
}

impl Drop for Oidc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stateless MCP 2026-07-28 client over one keep-alive connection (made
/// again after an error): each `tools/call` is one POST.
pub struct Stateless {
    port: u16,
    conn: Option<BufReader<TcpStream>>,
    /// The access token sent with each request, if any.
    pub bearer: Option<String>,
    /// The client capabilities each request declares (default: none).
    pub capabilities: Value,
}

/// Why a request got no JSON-RPC response.
#[derive(Debug)]
pub enum Transport {
    /// The connection failed or closed, or the reply was not HTTP.
    Io(std::io::Error),
    /// An HTTP status other than 200, with its body.
    Status(u16, String),
}

impl Stateless {
    /// A client of `127.0.0.1:port`.
    pub fn new(port: u16) -> Stateless {
        Stateless {
            port,
            conn: None,
            bearer: None,
            capabilities: json!({}),
        }
    }

    /// Sends `method` with `params` (the 2026-07-28 `_meta` added) as
    /// request `id`; the JSON-RPC response.
    pub fn request(
        &mut self,
        id: &str,
        method: &str,
        name: &str,
        params: Value,
    ) -> Result<Value, Transport> {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
        });
        let body =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let result = self.post(method, name, &body);
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// `tools/call` of `tool` with `arguments`.
    pub fn call(&mut self, id: &str, tool: &str, arguments: Value) -> Result<Value, Transport> {
        self.request(
            id,
            "tools/call",
            tool,
            json!({"name": tool, "arguments": arguments}),
        )
    }

    fn post(&mut self, method: &str, name: &str, body: &str) -> Result<Value, Transport> {
        if self.conn.is_none() {
            let s = TcpStream::connect(("127.0.0.1", self.port)).map_err(Transport::Io)?;
            s.set_read_timeout(Some(Duration::from_secs(60)))
                .map_err(Transport::Io)?;
            s.set_nodelay(true).map_err(Transport::Io)?;
            self.conn = Some(BufReader::new(s));
        }
        let Some(conn) = self.conn.as_mut() else {
            unreachable!("connected above")
        };
        let auth = self
            .bearer
            .as_deref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let name = if name.is_empty() {
            String::new()
        } else {
            format!("Mcp-Name: {name}\r\n")
        };
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\n{name}{auth}Content-Length: {}\r\n\r\n",
            self.port,
            body.len()
        );
        let stream = conn.get_mut();
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .map_err(Transport::Io)?;
        let (status, text) = read_response(conn).map_err(Transport::Io)?;
        if status != 200 {
            return Err(Transport::Status(status, text));
        }
        // A JSON body, or an event stream whose `data:` line is the response.
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|d| !d.is_empty())
            .unwrap_or(text.trim());
        serde_json::from_str(json).map_err(|e| {
            Transport::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not a JSON-RPC response ({e}): {text}"),
            ))
        })
    }
}

/// The `result` of a JSON-RPC response, or a panic naming what came.
pub fn result_of(response: &Value) -> &Value {
    response
        .get("result")
        .unwrap_or_else(|| panic!("not a result: {response}"))
}

/// A tool result's error code, `None` on success.
pub fn error_code(result: &Value) -> Option<String> {
    if result["isError"] != true {
        return None;
    }
    result["_meta"]["toolhost"]["error"]["code"]
        .as_str()
        .map(str::to_owned)
        .or(Some("?".into()))
}
