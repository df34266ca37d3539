//! Which broker ports a client process really talks to: the remote ports of its TCP sockets,
//! from its open file descriptors (`/proc/PID/fd`, `socket:[INODE]`) matched against the
//! kernel's socket tables (`/proc/net/tcp`, `/proc/net/tcp6`). The driver samples every child
//! while it runs, so a SASL_SSL row proves its traffic went to the SASL_SSL listener only (a
//! client that quietly fell back to the PLAINTEXT port would show that port).

use std::collections::BTreeSet;

/// The socket inodes among a process's open file descriptors (empty once it has exited).
fn socket_inodes(pid: libc::pid_t) -> BTreeSet<u64> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return BTreeSet::new();
    };
    entries
        .filter_map(|entry| {
            let target = std::fs::read_link(entry.ok()?.path()).ok()?;
            let target = target.to_str()?;
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The remote port and inode of one line of `/proc/net/tcp` or `tcp6` (`None` for the header
/// or a line that does not parse). Fields: `sl local_address rem_address st ... uid timeout
/// inode`, addresses as `HEXIP:HEXPORT`.
fn remote_port_and_inode(line: &str) -> Option<(u16, u64)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let remote = fields.get(2)?;
    let (_, port) = remote.rsplit_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let inode = fields.get(9)?.parse().ok()?;
    Some((port, inode))
}

/// The remote ports of `pid`'s TCP connections right now (listening sockets, remote port 0,
/// are left out).
pub fn remote_ports(pid: libc::pid_t) -> BTreeSet<u16> {
    let inodes = socket_inodes(pid);
    if inodes.is_empty() {
        return BTreeSet::new();
    }
    let mut ports = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for (port, inode) in text.lines().skip(1).filter_map(remote_port_and_inode) {
            if port != 0 && inodes.contains(&inode) {
                ports.insert(port);
            }
        }
    }
    ports
}

/// The port of a `host:port` bootstrap address.
pub fn port_of(bootstrap: &str) -> Option<u16> {
    bootstrap.rsplit_once(':')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_line_gives_the_remote_port_and_the_inode() {
        let line =
            "   5: 0100007F:97A8 0100007F:4A96 01 00000000:00000000 00:00000000 00000000     \
                    0        0 1315833 2 00000000b374970d 20 0 0 10 -1";
        assert_eq!(remote_port_and_inode(line), Some((19094, 1315833)));
        let header =
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   \
                      uid  timeout inode";
        assert_eq!(remote_port_and_inode(header), None);
    }

    #[test]
    fn our_own_connection_shows_its_remote_port() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let ports = remote_ports(std::process::id() as libc::pid_t);
        assert!(ports.contains(&port), "{ports:?} lacks {port}");
    }

    #[test]
    fn the_port_of_a_bootstrap_address() {
        assert_eq!(port_of("localhost:19194"), Some(19194));
        assert_eq!(port_of("localhost"), None);
    }
}
