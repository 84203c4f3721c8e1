//! Hostile network tools: raw TCP, UDP and name lookup through `std::net`
//! (which imports `wasi:sockets`). A separate component from the hostile
//! guest because these imports need a network grant: under a policy without
//! one the host refuses the whole component (`import_denied`); with one,
//! raw sockets stay off and every attempt fails inside the guest.
//!
//! | tool | behaviour |
//! | --- | --- |
//! | `tcp_connect` | `{addr}` → connects and writes `hello` |
//! | `udp_send` | `{addr}` → binds `0.0.0.0:0` and sends `hello` |
//! | `dns_lookup` | `{name}` → resolves `name:80` |

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_kit::{Annotations, Tool, ToolError};

/// `{addr}`: an `ip:port` socket address.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddrArgs {
    /// `ip:port`.
    pub addr: String,
}

/// `{name}`: a host name.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameArgs {
    /// A DNS name.
    pub name: String,
}

/// What the attempt reached.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reached {
    /// Addresses reached or resolved.
    pub addrs: Vec<String>,
}

fn io_error(e: &std::io::Error) -> ToolError {
    ToolError::new("io_error", e.to_string())
        .with_info(serde_json::json!({ "kind": format!("{:?}", e.kind()) }))
}

fn parse(addr: &str) -> Result<std::net::SocketAddr, ToolError> {
    addr.parse()
        .map_err(|e| ToolError::invalid_arguments(format!("bad address `{addr}`: {e}")))
}

macro_rules! net_tool {
    ($ty:ident, $name:literal, $desc:literal, $args:ty, |$a:pat_param| $body:expr) => {
        #[doc = $desc]
        pub struct $ty;
        impl Tool for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $desc;
            type Args = $args;
            type Output = Reached;
            fn annotations() -> Annotations {
                Annotations::NONE
            }
            fn execute($a: $args) -> Result<Reached, ToolError> {
                $body
            }
        }
    };
}

net_tool!(
    TcpConnect,
    "tcp_connect",
    "Connects over TCP and writes hello.",
    AddrArgs,
    |a| {
        use std::io::Write;
        let addr = parse(&a.addr)?;
        let mut s = std::net::TcpStream::connect(addr).map_err(|e| io_error(&e))?;
        s.write_all(b"hello").map_err(|e| io_error(&e))?;
        Ok(Reached {
            addrs: vec![addr.to_string()],
        })
    }
);

net_tool!(
    UdpSend,
    "udp_send",
    "Sends one UDP datagram.",
    AddrArgs,
    |a| {
        let addr = parse(&a.addr)?;
        let s = std::net::UdpSocket::bind("0.0.0.0:0").map_err(|e| io_error(&e))?;
        s.send_to(b"hello", addr).map_err(|e| io_error(&e))?;
        Ok(Reached {
            addrs: vec![addr.to_string()],
        })
    }
);

net_tool!(
    DnsLookup,
    "dns_lookup",
    "Resolves a host name.",
    NameArgs,
    |a| {
        use std::net::ToSocketAddrs;
        let addrs = (a.name.as_str(), 80)
            .to_socket_addrs()
            .map_err(|e| io_error(&e))?
            .map(|s| s.to_string())
            .collect();
        Ok(Reached { addrs })
    }
);

toolhost_kit::export_tools!(TcpConnect, UdpSend, DnsLookup);
