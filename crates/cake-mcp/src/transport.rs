//! Newline-delimited JSON-RPC over a reader and a writer (stdio), like rmcp's own transport,
//! except that a line over [`MAX_LINE_BYTES`] is answered with a JSON-RPC error (rmcp drops it
//! silently, leaving the client waiting forever).

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::limits::MAX_LINE_BYTES;

/// How much of an oversized line is kept to find its `id`.
const ID_PREFIX_BYTES: usize = 4096;

pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Dropping the rest of an oversized line, until its newline.
    discarding: bool,
    /// Lines to write, in the order they were sent, to the one task that owns the writer.
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<tokio::task::JoinHandle<W>>,
}

type Outgoing = (Vec<u8>, Option<oneshot::Sender<std::io::Result<()>>>);

impl<R: AsyncRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> LineTransport<R, W> {
    pub fn new(read: R, write: W) -> Self {
        Self::with_max_line(read, write, MAX_LINE_BYTES)
    }

    /// Call within a Tokio runtime: the writer gets a task of its own, so lines go out whole
    /// and in order even when `receive` is dropped mid-way (rmcp polls it in a `select!`).
    pub fn with_max_line(read: R, mut write: W, max: usize) -> Self {
        let (out, mut lines) = mpsc::unbounded_channel::<Outgoing>();
        let writer = tokio::spawn(async move {
            while let Some((line, done)) = lines.recv().await {
                let r = match write.write_all(&line).await {
                    Ok(()) => write.flush().await,
                    Err(e) => Err(e),
                };
                if let Some(done) = done {
                    let _ = done.send(r);
                }
            }
            write
        });
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            max,
            discarding: false,
            out: Some(out),
            writer: Some(writer),
        }
    }

    /// Queue one line; `done` hears when it is written.
    fn send_line(&self, mut line: Vec<u8>, done: Option<oneshot::Sender<std::io::Result<()>>>) {
        line.push(b'\n');
        let refused = match &self.out {
            Some(out) => out.send((line, done)).err().and_then(|e| e.0 .1),
            None => done,
        };
        if let Some(done) = refused {
            let _ = done.send(Err(std::io::ErrorKind::NotConnected.into()));
        }
    }

    fn send_error(&self, id: Value, code: i64, message: String) {
        let e = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.send_line(e.to_string().into_bytes(), None);
    }

    /// The next whole line into `self.line`; `false` at end of input. Cancel-safe: partial
    /// state lives on `self`.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut oversized = false;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len() + take > self.max {
                oversized = true;
                let keep = ID_PREFIX_BYTES.saturating_sub(self.line.len()).min(take);
                self.line.extend_from_slice(&available[..keep]);
                self.discarding = newline.is_none();
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if oversized {
                let id = top_level_id(&self.line).unwrap_or(Value::Null);
                self.line.clear();
                self.send_error(
                    id,
                    -32600,
                    format!(
                        "request too large: a message line may hold at most {} MiB; give a \
                         schedule by `path` rather than `source`",
                        self.max >> 20
                    ),
                );
            } else if newline.is_some() && !self.discarding && !self.line.is_empty() {
                return Ok(true);
            }
        }
    }
}

impl<R, W> rmcp::transport::Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (done, written) = oneshot::channel();
        let queued = serde_json::to_vec(&item).map(|l| self.send_line(l, Some(done)));
        async move {
            queued.map_err(std::io::Error::other)?;
            written
                .await
                .unwrap_or_else(|_| Err(std::io::ErrorKind::NotConnected.into()))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                // End of input, or stdin broken: the client is gone and the session ends.
                Ok(false) | Err(_) => return None,
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(text) {
                Ok(m) => return Some(m),
                Err(e) if e.is_syntax() || e.is_eof() => {
                    // Not JSON: no id to answer, and answering garbage can start an error storm
                    // (rmcp and the other SDKs ignore it too).
                }
                Err(e) => {
                    // JSON of the wrong shape: a request gets an error; a notification none.
                    let v: Value = serde_json::from_slice(text).unwrap_or(Value::Null);
                    if let Some(id) = v.get("id").filter(|i| i.is_string() || i.is_number()) {
                        self.send_error(id.clone(), -32600, format!("invalid request: {e}"));
                    } else if v.get("method").is_none() {
                        self.send_error(Value::Null, -32600, format!("invalid request: {e}"));
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The writer drains what is queued, then hands the stream back.
        self.out = None;
        if let Some(writer) = self.writer.take() {
            let mut w = writer.await.map_err(std::io::Error::other)?;
            w.flush().await?;
        }
        Ok(())
    }
}

/// The top-level `"id"` (a number or a string) of the start of a JSON-RPC message, if it is
/// there: an oversized request is answered under its own id when the id comes first.
fn top_level_id(prefix: &[u8]) -> Option<Value> {
    let skip_ws = |mut i: usize| {
        while prefix.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    // The index just past the string starting at `i` (a quote).
    let string_end = |mut i: usize| {
        i += 1;
        while i < prefix.len() {
            match prefix[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    let mut i = skip_ws(0);
    if prefix.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut depth = 1usize;
    let mut key_next = true;
    while i < prefix.len() {
        match prefix[i] {
            b'"' => {
                let end = string_end(i)?;
                if depth == 1 && key_next {
                    let key = &prefix[i + 1..end - 1];
                    let colon = skip_ws(end);
                    if prefix.get(colon) != Some(&b':') {
                        return None;
                    }
                    let start = skip_ws(colon + 1);
                    if key == b"id" {
                        let stop = if prefix.get(start) == Some(&b'"') {
                            string_end(start)?
                        } else {
                            start
                                + prefix[start..].iter().position(|b| {
                                    matches!(b, b',' | b'}') || b.is_ascii_whitespace()
                                })?
                        };
                        let v: Value = serde_json::from_slice(&prefix[start..stop]).ok()?;
                        return (v.is_number() || v.is_string()).then_some(v);
                    }
                    key_next = false;
                    i = start;
                } else {
                    i = end;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => key_next = true,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::top_level_id;
    use serde_json::json;

    #[test]
    fn finds_the_top_level_id() {
        let id = |s: &str| top_level_id(s.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"#),
            Some(json!(7))
        );
        assert_eq!(id(r#" { "id" : "a\"b" , "#), Some(json!("a\"b")));
        assert_eq!(
            id(r#"{"params":{"id":1,"s":"}"},"id":2,"x""#),
            Some(json!(2))
        );
        assert_eq!(id(r#"{"method":"x","params":{"source":"aaaa"#), None);
        assert_eq!(id(r#"[{"id":1}]"#), None);
        assert_eq!(id(r#"{"id":null,"#), None);
        assert_eq!(id(r#"{"id":12"#), None);
    }
}
