//! Opening a broker's TCP socket with the options Java's `Selector.configureSocketChannel`
//! sets before it connects: `SO_KEEPALIVE`, and `SO_SNDBUF` / `SO_RCVBUF` from
//! `send.buffer.bytes` / `receive.buffer.bytes` unless they are -1 (the OS default). The
//! buffers are set *before* connecting because the receive buffer decides the TCP window
//! scale, which is fixed in the SYN: a buffer grown after the handshake cannot use it.

use std::io;

use tokio::net::TcpStream;

/// `send.buffer.bytes` and `receive.buffer.bytes`; `None` keeps the OS default (Java's -1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SocketBuffers {
    pub send_bytes: Option<u32>,
    pub receive_bytes: Option<u32>,
}

/// Connects to `host:port`, trying each address the name resolves to in turn (as
/// `TcpStream::connect` does), with `buffers` applied to every socket before it connects.
#[cfg(not(madsim))]
pub(crate) async fn connect(
    host: &str,
    port: u16,
    buffers: SocketBuffers,
) -> io::Result<TcpStream> {
    let mut last_error = None;
    for address in tokio::net::lookup_host((host, port)).await? {
        match connect_one(address, buffers).await {
            Ok(stream) => return Ok(stream),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} resolved to no address"),
        )
    }))
}

#[cfg(not(madsim))]
async fn connect_one(
    address: std::net::SocketAddr,
    buffers: SocketBuffers,
) -> io::Result<TcpStream> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_keepalive(true)?;
    if let Some(bytes) = buffers.send_bytes {
        socket.set_send_buffer_size(bytes)?;
    }
    if let Some(bytes) = buffers.receive_bytes {
        socket.set_recv_buffer_size(bytes)?;
    }
    socket.connect(address).await
}

/// The simulator's sockets have no kernel buffers to size: plain connect.
#[cfg(madsim)]
pub(crate) async fn connect(
    host: &str,
    port: u16,
    _buffers: SocketBuffers,
) -> io::Result<TcpStream> {
    TcpStream::connect((host, port)).await
}

#[cfg(all(test, not(madsim)))]
mod tests {
    use super::*;

    /// What the kernel reports for a connected socket's buffers. Linux doubles the value set
    /// (for its bookkeeping) and reports that; other systems report what was set.
    fn reported(stream: &TcpStream) -> (usize, usize) {
        let socket = socket2::SockRef::from(stream);
        (
            socket.send_buffer_size().unwrap(),
            socket.recv_buffer_size().unwrap(),
        )
    }

    fn expected(set_bytes: u32) -> usize {
        let set = set_bytes as usize;
        if cfg!(target_os = "linux") {
            2 * set
        } else {
            set
        }
    }

    #[tokio::test]
    async fn buffers_are_applied_and_minus_one_keeps_the_os_default() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accept = tokio::spawn(async move {
            let mut held = Vec::new();
            for _ in 0..2 {
                held.push(listener.accept().await.unwrap().0);
            }
            held
        });
        let sized = connect(
            "localhost",
            port,
            SocketBuffers {
                send_bytes: Some(24_576),
                receive_bytes: Some(40_960),
            },
        )
        .await
        .unwrap();
        let default = connect("127.0.0.1", port, SocketBuffers::default())
            .await
            .unwrap();
        accept.await.unwrap();

        assert_eq!(reported(&sized), (expected(24_576), expected(40_960)));
        assert_ne!(reported(&default), reported(&sized));
        assert!(socket2::SockRef::from(&sized).keepalive().unwrap());
        assert!(socket2::SockRef::from(&default).keepalive().unwrap());
    }

    #[tokio::test]
    async fn a_refused_connection_is_the_os_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let error = connect("127.0.0.1", port, SocketBuffers::default())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);
    }
}
