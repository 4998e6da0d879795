//! A bound on what a store's server may send: no reply or pub/sub message
//! over [`MESSAGE_MAX`]. What retry asks a store for is small (a master's
//! address is two short strings, the script's answer a few integers, a
//! failover announcement one line), but the redis crate buffers whatever a
//! reply claims to be (redis-server itself refuses bulk strings over
//! 512 MB only): a hostile or broken sentinel could grow retry's memory
//! without end with an endless `+switch-master` message, or spend hundreds
//! of megabytes with one answer to the master lookup.
//!
//! The crate has no limit of its own, but takes any stream for a
//! connection: [`Bounded`] reads through one, following the RESP framing
//! (RESP2 and RESP3) just far enough to know where each top-level reply
//! ends, and fails the read (so the crate drops the connection, and a
//! subscription on it) once one reply passes the bound. Connections over
//! plain TCP or a Unix socket are made this way; TLS connections are made
//! by the crate, whose TLS set-up is its own, and are not bounded here (a
//! peer there must first hold a certificate retry trusts).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, RedisError, RedisResult};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest reply or message a store's server may send: far more than
/// any answer retry asks for.
pub const MESSAGE_MAX: usize = 64 * 1024;

/// Where the scanner stands in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the type byte of a value.
    Type,
    /// In the header line of a value of this type, up to its newline.
    Line(u8),
    /// In a bulk value's bytes and their CRLF: so many left.
    Bulk(u64),
}

/// Follows RESP framing byte by byte, counting each top-level reply.
#[derive(Debug)]
pub struct Scanner {
    state: State,
    /// Values still to come in each open aggregate, innermost last.
    open: Vec<u64>,
    /// Bytes of the current top-level reply so far.
    size: usize,
    /// The start of the current header line (enough for a length).
    line: Vec<u8>,
}

impl Default for Scanner {
    fn default() -> Scanner {
        Scanner {
            state: State::Type,
            open: Vec::new(),
            size: 0,
            line: Vec::with_capacity(24),
        }
    }
}

/// A reply passed [`MESSAGE_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

impl Scanner {
    /// Takes the next bytes of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), TooLong> {
        while !bytes.is_empty() {
            match self.state {
                State::Type => {
                    self.grow(1)?;
                    self.state = State::Line(bytes[0]);
                    self.line.clear();
                    bytes = &bytes[1..];
                }
                State::Line(kind) => {
                    let end = memchr::memchr(b'\n', bytes);
                    let take = end.map_or(bytes.len(), |i| i + 1);
                    self.grow(take)?;
                    let room = self.line.capacity() - self.line.len();
                    self.line.extend_from_slice(&bytes[..take.min(room)]);
                    bytes = &bytes[take..];
                    if end.is_some() {
                        self.header(kind);
                    }
                }
                State::Bulk(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
                    self.grow(take)?;
                    bytes = &bytes[take..];
                    let left = left - take as u64;
                    if left == 0 {
                        self.value_done();
                    } else {
                        self.state = State::Bulk(left);
                    }
                }
            }
        }
        Ok(())
    }

    fn grow(&mut self, n: usize) -> Result<(), TooLong> {
        self.size += n;
        if self.size > MESSAGE_MAX {
            Err(TooLong)
        } else {
            Ok(())
        }
    }

    /// A header line ended: what follows it, by the value's type.
    fn header(&mut self, kind: u8) {
        let n: i64 = std::str::from_utf8(&self.line)
            .ok()
            .and_then(|l| l.trim_end().parse().ok())
            .unwrap_or(-1);
        let n = u64::try_from(n).ok();
        match (kind, n) {
            // Bulk string, bulk error, verbatim string: the bytes, CRLF.
            (b'$' | b'!' | b'=', Some(n)) => {
                self.state = State::Bulk(n.saturating_add(2));
                return;
            }
            // Array, set, push.
            (b'*' | b'~' | b'>', Some(n)) if n > 0 => self.open.push(n),
            // Map: a key and a value each.
            (b'%', Some(n)) if n > 0 => self.open.push(n.saturating_mul(2)),
            // Attributes: their map, then the value they describe.
            (b'|', Some(n)) => self.open.push(n.saturating_mul(2).saturating_add(1)),
            _ => {
                self.value_done();
                return;
            }
        }
        self.state = State::Type;
    }

    /// A value is complete: so is every aggregate it was the last of, and
    /// with the outermost, the reply.
    fn value_done(&mut self) {
        self.state = State::Type;
        while let Some(left) = self.open.last_mut() {
            *left -= 1;
            if *left > 0 {
                return;
            }
            self.open.pop();
        }
        self.size = 0;
    }
}

/// A stream whose reads fail once one reply passes [`MESSAGE_MAX`].
pub struct Bounded<S> {
    inner: S,
    scanner: Scanner,
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        if this.scanner.feed(&buf.filled()[before..]).is_err() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the server sent a reply of over {} KiB, more than any answer retry asks for",
                    MESSAGE_MAX / 1024
                ),
            )));
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A plain stream to a server.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// A bounded stream to `addr`, or None for an address the crate connects
/// to itself (TLS).
async fn open(addr: &ConnectionAddr) -> io::Result<Option<Bounded<Box<dyn Stream>>>> {
    let inner: Box<dyn Stream> = match addr {
        ConnectionAddr::Tcp(host, port) => {
            let s = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
            s.set_nodelay(true)?;
            Box::new(s)
        }
        ConnectionAddr::Unix(path) => Box::new(tokio::net::UnixStream::connect(path).await?),
        _ => return Ok(None),
    };
    Ok(Some(Bounded {
        inner,
        scanner: Scanner::default(),
    }))
}

/// A timeout as the crate reports one.
fn timed_out() -> RedisError {
    RedisError::from(io::Error::from(io::ErrorKind::TimedOut))
}

/// A multiplexed connection to the server of `info`, its replies bounded
/// where the stream is retry's (see the module's comment); connecting and
/// the connection's set-up (AUTH, SELECT) take at most `timeout`.
pub async fn multiplexed(
    info: &ConnectionInfo,
    config: &AsyncConnectionConfig,
    timeout: Duration,
) -> RedisResult<MultiplexedConnection> {
    let made = tokio::time::timeout(timeout, async {
        let Some(stream) = open(info.addr()).await? else {
            // TLS: the crate's own stream, trusting --state-cacert's
            // certificates where given.
            let client = super::link::client(info.clone())?;
            return client
                .get_multiplexed_async_connection_with_config(config)
                .await;
        };
        let (conn, driver) =
            MultiplexedConnection::new_with_config(info.redis_settings(), stream, config.clone())
                .await?;
        tokio::spawn(driver);
        Ok(conn)
    })
    .await;
    made.unwrap_or_else(|_| Err(timed_out()))
}

/// A pub/sub connection to the server of `info`, bounded as
/// [`multiplexed`] is: a message past the bound ends the subscription.
pub async fn pubsub(info: &ConnectionInfo, timeout: Duration) -> RedisResult<redis::aio::PubSub> {
    let made = tokio::time::timeout(timeout, async {
        let Some(stream) = open(info.addr()).await? else {
            return super::link::client(info.clone())?.get_async_pubsub().await;
        };
        redis::aio::PubSub::new(info.redis_settings(), stream).await
    })
    .await;
    made.unwrap_or_else(|_| Err(timed_out()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` in pieces of `step`, and says whether the bound held.
    fn fits(bytes: &[u8], step: usize) -> bool {
        let mut s = Scanner::default();
        bytes.chunks(step).all(|c| s.feed(c).is_ok())
    }

    #[test]
    fn replies_are_framed_and_each_counted_from_zero() {
        // The master's address, a pub/sub message, integers, a map with
        // attributes, nulls: many of them in a row never add up.
        let one = b"*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6379\r\n\
                    *3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$5\r\nm 1 2\r\n\
                    *3\r\n:1\r\n:-2\r\n,1.5\r\n\
                    |1\r\n+k\r\n+v\r\n%1\r\n+a\r\n#t\r\n\
                    $-1\r\n*-1\r\n_\r\n*0\r\n+OK\r\n-ERR x\r\n";
        let many: Vec<u8> = one.repeat(MESSAGE_MAX / one.len() * 4);
        for step in [1, 7, 4096] {
            assert!(fits(&many, step), "step {step}");
        }
        let mut s = Scanner::default();
        s.feed(one).expect("fits");
        assert_eq!((s.state, s.open.len(), s.size), (State::Type, 0, 0));
    }

    /// A sentinel that streamed an endless `+switch-master` message, or a
    /// 1.5 GB answer to the master lookup, grew retry's memory with it.
    #[test]
    fn one_reply_past_the_bound_is_refused_whatever_its_shape() {
        let big = MESSAGE_MAX + 1;
        let bulk = format!("*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n${big}\r\n");
        let mut endless_bulk = bulk.into_bytes();
        endless_bulk.extend(std::iter::repeat_n(b'x', big));
        let mut endless_line = b"+".to_vec();
        endless_line.extend(std::iter::repeat_n(b'x', big));
        let mut endless_array = format!("*{big}\r\n").into_bytes();
        endless_array.extend(b":1\r\n".repeat(big / 4 + 1));
        let mut deep = Vec::new();
        for _ in 0..big / 4 + 1 {
            deep.extend(b"*1\r\n");
        }
        for bytes in [endless_bulk, endless_line, endless_array, deep] {
            for step in [1, 4096, bytes.len()] {
                assert!(!fits(&bytes, step), "step {step}");
            }
        }
        // A reply of exactly the bound is one; a byte more is not.
        let reply = |n: usize| {
            let mut r = format!("${n}\r\n").into_bytes();
            r.extend(std::iter::repeat_n(b'x', n));
            r.extend(b"\r\n");
            r
        };
        let exact = reply(MESSAGE_MAX - 8 - 2);
        assert_eq!(exact.len(), MESSAGE_MAX);
        assert!(fits(&exact.repeat(3), 100));
        assert!(!fits(&reply(MESSAGE_MAX - 8 - 1), 100));
    }
}
