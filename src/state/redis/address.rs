//! Where a Redis store is: one server, a Sentinel-managed master, or a
//! Cluster, read from its URL.
//!
//! One server is what the redis crate reads (`redis://`, `rediss://`,
//! `unix://`, `redis+unix://`). The other two are ours, shaped as the
//! clients most people meet write them:
//!
//! - `redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]`
//!   `[?sentinel_username=U&sentinel_password=P]`: the sentinels (port
//!   26379 by default) and the name they know the master by. USER and
//!   PASSWORD are the master's; the sentinels' own come as parameters.
//! - `redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]`: seed
//!   nodes (port 6379 by default); the cluster names the rest.
//!
//! `rediss+sentinel://` and `rediss+cluster://` speak TLS to every server.
//! Parts are percent-decoded. Errors say what is wrong without repeating
//! the URL, which may hold a password.

use percent_encoding::percent_decode_str;

/// The port of a sentinel when the URL gives none.
pub const SENTINEL_PORT: u16 = 26379;
/// The port of a cluster node when the URL gives none.
pub const REDIS_PORT: u16 = 6379;

/// A server's host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// A name or an address (an IPv6 one without its brackets).
    pub host: String,
    pub port: u16,
}

/// A user name and password, either of them absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Auth {
    pub user: Option<String>,
    pub password: Option<String>,
}

/// A master that sentinels watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentinel {
    pub sentinels: Vec<Node>,
    pub master: String,
    pub db: i64,
    pub tls: bool,
    /// For the master (and whichever replica takes its place).
    pub auth: Auth,
    /// For the sentinels.
    pub sentinel_auth: Auth,
}

/// A cluster, by some of its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cluster {
    pub seeds: Vec<Node>,
    pub tls: bool,
    pub auth: Auth,
}

/// What a store URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// One server: the URL as the redis crate reads it.
    Single(String),
    Sentinel(Sentinel),
    Cluster(Cluster),
}

impl Address {
    /// Reads `url`; what is wrong, in words that never repeat it.
    pub fn parse(url: &str) -> Result<Address, String> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Ok(Address::Single(url.to_string()));
        };
        match scheme {
            "redis+sentinel" | "rediss+sentinel" => {
                sentinel(rest, scheme.starts_with("rediss")).map(Address::Sentinel)
            }
            "redis+cluster" | "rediss+cluster" => {
                cluster(rest, scheme.starts_with("rediss")).map(Address::Cluster)
            }
            _ => Ok(Address::Single(url.to_string())),
        }
    }

    /// Whether the URL holds the password of the servers that keep the
    /// data (a sentinel's own password does not count).
    pub fn has_password(&self) -> bool {
        match self {
            Address::Single(u) => redis::IntoConnectionInfo::into_connection_info(u.as_str())
                .is_ok_and(|i| i.redis_settings().password().is_some()),
            Address::Sentinel(s) => s.auth.password.is_some(),
            Address::Cluster(c) => c.auth.password.is_some(),
        }
    }
}

/// The URL after `scheme://`, cut into user info, hosts, path and query.
struct Cut<'a> {
    userinfo: Option<&'a str>,
    hosts: &'a str,
    path: &'a str,
    query: Option<&'a str>,
}

fn cut(rest: &str) -> Result<Cut<'_>, String> {
    if rest.contains('#') {
        return Err("a '#' has no place in this URL (percent-encode it as %23)".into());
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    Ok(Cut {
        userinfo,
        hosts,
        path,
        query,
    })
}

fn decoded(part: &str, what: &str) -> Result<String, String> {
    percent_decode_str(part)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| format!("the {what} is not UTF-8 once percent-decoded"))
}

fn auth(userinfo: Option<&str>) -> Result<Auth, String> {
    let Some(info) = userinfo else {
        return Ok(Auth::default());
    };
    let (user, password) = match info.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (info, None),
    };
    let nonempty = |s: String| (!s.is_empty()).then_some(s);
    Ok(Auth {
        user: nonempty(decoded(user, "user name")?),
        password: match password {
            Some(p) => nonempty(decoded(p, "password")?),
            None => None,
        },
    })
}

/// `HOST[:PORT][,HOST[:PORT]...]`, IPv6 addresses in brackets.
fn nodes(list: &str, default_port: u16, what: &str) -> Result<Vec<Node>, String> {
    if list.is_empty() {
        return Err(format!("no {what}"));
    }
    list.split(',')
        .map(|item| node(item, default_port).map_err(|why| format!("{why} in the list of {what}s")))
        .collect()
}

fn node(item: &str, default_port: u16) -> Result<Node, String> {
    if item.is_empty() {
        return Err("an empty entry".into());
    }
    let (host, port) = if let Some(inner) = item.strip_prefix('[') {
        let (v6, after) = inner
            .split_once(']')
            .ok_or("an IPv6 address without its closing ']'")?;
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err("an IPv6 address that does not parse".into());
        }
        match after {
            "" => (v6, None),
            p => (
                v6,
                Some(
                    p.strip_prefix(':')
                        .ok_or("something after an IPv6 address")?,
                ),
            ),
        }
    } else {
        match item.split_once(':') {
            Some((h, p)) if !p.contains(':') => (h, Some(p)),
            Some(_) => return Err("an IPv6 address not in brackets".into()),
            None => (item, None),
        }
    };
    let valid_host = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':'));
    if !valid_host {
        return Err(
            "a host name that is empty or holds other than letters, digits, '.', '-' and '_'"
                .into(),
        );
    }
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err("a port that is not a number from 1 to 65535".into()),
        },
    };
    Ok(Node {
        host: host.to_string(),
        port,
    })
}

fn sentinel(rest: &str, tls: bool) -> Result<Sentinel, String> {
    const FORM: &str = "the master's name after the sentinels: .../MASTER[/DB]";
    let c = cut(rest)?;
    let sentinels = nodes(c.hosts, SENTINEL_PORT, "sentinel")?;
    let mut segments = c.path.strip_prefix('/').unwrap_or(c.path).split('/');
    let master = decoded(segments.next().unwrap_or(""), "master's name")?;
    if master.is_empty() {
        return Err(format!("no master name: give {FORM}"));
    }
    let db = match segments.next() {
        None | Some("") => 0,
        Some(d) => match d.parse::<i64>() {
            Ok(n) if n >= 0 => n,
            _ => return Err("a database that is not a whole number (.../MASTER/DB)".into()),
        },
    };
    if segments.next().is_some() {
        return Err(format!("more in the path than {FORM}"));
    }
    let mut sentinel_auth = Auth::default();
    for pair in c.query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decoded(v, "value of a query parameter")?;
        let value = (!value.is_empty()).then_some(value);
        match k {
            "sentinel_username" => sentinel_auth.user = value,
            "sentinel_password" => sentinel_auth.password = value,
            _ => {
                return Err(
                    "a query parameter other than sentinel_username and sentinel_password".into(),
                );
            }
        }
    }
    Ok(Sentinel {
        sentinels,
        master,
        db,
        tls,
        auth: auth(c.userinfo)?,
        sentinel_auth,
    })
}

fn cluster(rest: &str, tls: bool) -> Result<Cluster, String> {
    let c = cut(rest)?;
    let seeds = nodes(c.hosts, REDIS_PORT, "node")?;
    if !matches!(c.path, "" | "/" | "/0") {
        return Err("a path: a cluster has one database, and its URL ends after the nodes".into());
    }
    if c.query.is_some_and(|q| !q.is_empty()) {
        return Err("a query: a cluster URL takes none".into());
    }
    Ok(Cluster {
        seeds,
        tls,
        auth: auth(c.userinfo)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(host: &str, port: u16) -> Node {
        Node {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn sentinel_urls_name_the_sentinels_the_master_and_both_credentials() {
        let a = Address::parse(
            "rediss+sentinel://app:p%40ss@s1,s2:26380,[::1]:5000/my%2Dmaster/3?sentinel_password=sp",
        );
        assert_eq!(
            a,
            Ok(Address::Sentinel(Sentinel {
                sentinels: vec![n("s1", 26379), n("s2", 26380), n("::1", 5000)],
                master: "my-master".into(),
                db: 3,
                tls: true,
                auth: Auth {
                    user: Some("app".into()),
                    password: Some("p@ss".into())
                },
                sentinel_auth: Auth {
                    user: None,
                    password: Some("sp".into())
                },
            }))
        );
        let Ok(Address::Sentinel(s)) = Address::parse("redis+sentinel://:pw@h/m/") else {
            panic!("should parse");
        };
        assert_eq!(
            (s.db, s.tls, s.auth.user, s.auth.password.as_deref()),
            (0, false, None, Some("pw"))
        );
        assert!(
            Address::parse("redis+sentinel://h/m?sentinel_password=x")
                .is_ok_and(|a| !a.has_password())
        );
    }

    #[test]
    fn cluster_urls_name_seed_nodes() {
        assert_eq!(
            Address::parse("redis+cluster://:pw@10.0.0.1:7000,10.0.0.2"),
            Ok(Address::Cluster(Cluster {
                seeds: vec![n("10.0.0.1", 7000), n("10.0.0.2", 6379)],
                tls: false,
                auth: Auth {
                    user: None,
                    password: Some("pw".into())
                },
            }))
        );
        assert!(
            Address::parse("rediss+cluster://h:7000/")
                .is_ok_and(|a| a != Address::Single(String::new()))
        );
    }

    #[test]
    fn malformed_topology_urls_are_told_apart_without_their_secrets() {
        for (url, words) in [
            ("redis+sentinel://:hunter2@h1:26379", "no master name"),
            ("redis+sentinel://:hunter2@/m", "no sentinel"),
            ("redis+sentinel://:hunter2@h1,,h2/m", "an empty entry"),
            ("redis+sentinel://:hunter2@h1:0/m", "a port"),
            ("redis+sentinel://:hunter2@h1:99999/m", "a port"),
            ("redis+sentinel://:hunter2@::1/m", "brackets"),
            ("redis+sentinel://:hunter2@[::1/m", "closing"),
            ("redis+sentinel://:hunter2@h/m/x", "whole number"),
            ("redis+sentinel://:hunter2@h/m/1/2", "more in the path"),
            (
                "redis+sentinel://:hunter2@h/m?password=x",
                "query parameter",
            ),
            ("redis+sentinel://:hunter2@h/m#frag", "'#'"),
            ("redis+sentinel://:hunter2@h%20x/m", "host name"),
            ("redis+cluster://:hunter2@h/1", "a path"),
            ("redis+cluster://:hunter2@h?x=1", "a query"),
            ("redis+cluster://:hunter2@", "no node"),
            ("redis+cluster://:%ff@h", "not UTF-8"),
        ] {
            let why = Address::parse(url).expect_err(url);
            assert!(why.contains(words), "{url}: {why}");
            assert!(!why.contains("hunter2"), "{why}");
        }
    }

    #[test]
    fn other_urls_are_one_server() {
        for u in [
            "redis://h",
            "rediss://h/2",
            "unix:///r.sock",
            "redis+unix:///r.sock",
        ] {
            assert_eq!(Address::parse(u), Ok(Address::Single(u.into())));
        }
        assert!(Address::parse("redis://:pw@h").is_ok_and(|a| a.has_password()));
        assert!(Address::parse("unix:///r.sock?pass=pw").is_ok_and(|a| a.has_password()));
        assert!(Address::parse("redis://app@h").is_ok_and(|a| !a.has_password()));
    }

    #[test]
    fn their_credentials_are_masked_when_shown_and_removed_when_handed_on() {
        for (given, shown, handed_on) in [
            (
                "redis+sentinel://:hunter2@s1:26379,s2:26380/mymaster/1?sentinel_password=s3cret",
                "redis+sentinel://:***@s1:26379,s2:26380/mymaster/1?sentinel_password=***",
                Some("redis+sentinel://s1:26379,s2:26380/mymaster/1"),
            ),
            (
                "rediss+sentinel://app:hunter2@s1/m?sentinel_username=ops&sentinel_password=s3cret",
                "rediss+sentinel://app:***@s1/m?sentinel_username=ops&sentinel_password=***",
                Some("rediss+sentinel://app@s1/m?sentinel_username=ops"),
            ),
            (
                "redis+cluster://:hunter2@n1:7000,[::1]:7001",
                "redis+cluster://:***@n1:7000,[::1]:7001",
                Some("redis+cluster://n1:7000,[::1]:7001"),
            ),
            ("rediss+cluster://n1,n2", "rediss+cluster://n1,n2", None),
        ] {
            assert_eq!(crate::mask::url(given), shown);
            assert_eq!(
                crate::mask::url_without_password(given).as_deref(),
                handed_on,
                "{given}"
            );
            // In a logged command line too.
            assert_eq!(
                crate::mask::text(&format!("retry --state {given}")),
                format!("retry --state {shown}")
            );
        }
    }
}
