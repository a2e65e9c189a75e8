//! Who and when a CDN serves (issue 22): its IP allow-list (`whiteListIP`) and its time window
//! (`startTime`, `endTime`), parsed when a CDN is created and checked on every file request.
//!
//! Allow-list grammar (the OpenAPI's `whiteListIP` is one string):
//! ```text
//! list  = entry *( sep entry )      ; at most MAX_ENTRIES entries, MAX_LIST_BYTES bytes
//! sep   = 1*( "," / ";" / " " / "\t" / "\n" )
//! entry = ipv4 [ "/" 0-32 ] / ipv6 [ "/" 0-128 ]
//! ```
//! An empty (or blank) list lets every address in. The client's address is the TCP peer's:
//! `X-Forwarded-For` is not trusted (a client could write any address there). An IPv4 address
//! mapped into IPv6 (`::ffff:a.b.c.d`) is matched as IPv4.
//!
//! Times are RFC 3339 date-times, stored in UTC with milliseconds (`...T10:15:30.000+00:00`);
//! the window is `[startTime, endTime)`, either end open when absent.

use std::net::IpAddr;

use chrono::{DateTime, Utc};

/// Entries an allow-list may have.
pub const MAX_ENTRIES: usize = 100;
/// Longest allow-list accepted, in bytes.
pub const MAX_LIST_BYTES: usize = 4096;

/// One allowed address or network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Network {
    address: IpAddr,
    prefix: u8,
}

impl Network {
    fn parse(text: &str) -> Option<Network> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address = canonical(address.parse().ok()?);
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok()?,
            Some(_) => return None,
            None => max,
        };
        (prefix <= max).then_some(Network { address, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        match (self.address, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => same_prefix(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(ip)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                same_prefix(u128::from(net), u128::from(ip), self.prefix)
            }
            _ => false,
        }
    }

    fn render(&self) -> String {
        let max = if self.address.is_ipv4() { 32 } else { 128 };
        if self.prefix == max {
            self.address.to_string()
        } else {
            format!("{}/{}", self.address, self.prefix)
        }
    }
}

/// Whether the first `prefix` bits of `a` and `b` (left-aligned) agree.
fn same_prefix(a: u128, b: u128, prefix: u8) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - u32::from(prefix)) };
    a & mask == b & mask
}

/// An IPv4 address mapped into IPv6 as IPv4; others as they are.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// A CDN's allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowList(Vec<Network>);

impl AllowList {
    /// Parses a `whiteListIP` (see the module doc); `Ok(None)` for a blank one.
    pub fn parse(text: &str) -> Result<Option<AllowList>, String> {
        if text.len() > MAX_LIST_BYTES {
            return Err(format!("whiteListIP is at most {MAX_LIST_BYTES} bytes long."));
        }
        let separators = |c: char| matches!(c, ',' | ';' | ' ' | '\t' | '\n' | '\r');
        let entries: Vec<&str> = text.split(separators).filter(|e| !e.is_empty()).collect();
        if entries.is_empty() {
            return Ok(None);
        }
        if entries.len() > MAX_ENTRIES {
            return Err(format!("whiteListIP lists at most {MAX_ENTRIES} addresses or networks."));
        }
        let networks = entries
            .iter()
            .map(|e| {
                Network::parse(e).ok_or_else(|| {
                    let shown = crate::io::csv_import::clip(e, 64);
                    format!(
                        "whiteListIP: \"{shown}\" is not an IP address or network \
                         (a.b.c.d, a.b.c.d/n, IPv6, IPv6/n)."
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(AllowList(networks)))
    }

    /// The list as stored and shown: entries joined by commas, in canonical form.
    pub fn render(&self) -> String {
        self.0.iter().map(Network::render).collect::<Vec<_>>().join(",")
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(ip))
    }
}

/// A `startTime` or `endTime` in the stored form, or why it is refused.
pub fn parse_time(name: &str, text: &str) -> Result<String, String> {
    DateTime::parse_from_rfc3339(text.trim()).map(|t| format_time(t.with_timezone(&Utc))).map_err(
        |_| {
            let shown = crate::io::csv_import::clip(text, 64);
            format!("{name} \"{shown}\" is not an RFC 3339 date-time (2026-01-31T10:15:30Z).")
        },
    )
}

fn format_time(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string()
}

/// Where `now` lies against a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    Open,
    /// Before `startTime` (given).
    NotYet(String),
    /// At or after `endTime` (given).
    Over(String),
}

/// Checks `now` against the stored `start` and `end` (an unreadable stored time counts as
/// absent: the catalogue only holds times `parse_time` wrote).
pub fn window(start: Option<&str>, end: Option<&str>, now: DateTime<Utc>) -> Window {
    let read = |t: Option<&str>| t.and_then(|t| DateTime::parse_from_rfc3339(t).ok());
    if let (Some(text), Some(start)) = (start, read(start)) {
        if now < start {
            return Window::NotYet(text.to_owned());
        }
    }
    if let (Some(text), Some(end)) = (end, read(end)) {
        if now >= end {
            return Window::Over(text.to_owned());
        }
    }
    Window::Open
}

/// Whether `start` comes before `end` (both stored forms).
pub fn ordered(start: &str, end: &str) -> bool {
    match (DateTime::parse_from_rfc3339(start), DateTime::parse_from_rfc3339(end)) {
        (Ok(start), Ok(end)) => start < end,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn lists_parse_render_and_match() {
        let list = AllowList::parse(" 10.0.0.0/8; 192.168.1.7,\n2001:db8::/32 ")
            .expect("ok")
            .expect("some");
        assert_eq!(list.render(), "10.0.0.0/8,192.168.1.7,2001:db8::/32");
        assert!(list.allows(ip("10.200.3.4")) && list.allows(ip("192.168.1.7")));
        assert!(!list.allows(ip("192.168.1.8")) && !list.allows(ip("127.0.0.1")));
        assert!(list.allows(ip("2001:db8:1::9")) && !list.allows(ip("2001:db9::1")));
        assert!(list.allows(ip("::ffff:10.1.1.1")), "mapped IPv4 matches as IPv4");
        let everyone = AllowList::parse("0.0.0.0/0").expect("ok").expect("some");
        assert!(everyone.allows(ip("8.8.8.8")) && !everyone.allows(ip("::1")));
        assert_eq!(AllowList::parse(" , ").expect("blank"), None);
    }

    #[test]
    fn bad_lists_are_refused() {
        for bad in ["10.0.0.0/33", "::/129", "1.2.3", "1.2.3.4/", "1.2.3.4/x", "host", "1.2.3.4/-1"]
        {
            assert!(AllowList::parse(bad).is_err(), "{bad}");
        }
        let long = vec!["1.1.1.1"; MAX_ENTRIES + 1].join(",");
        assert!(AllowList::parse(&long).is_err());
        assert!(AllowList::parse(&"1".repeat(MAX_LIST_BYTES + 1)).is_err());
    }

    #[test]
    fn windows_are_half_open() {
        let start = parse_time("startTime", "2026-01-31T10:00:00+01:00").expect("time");
        assert_eq!(start, "2026-01-31T09:00:00.000+00:00");
        let end = parse_time("endTime", "2026-02-01T00:00:00Z").expect("time");
        assert!(ordered(&start, &end) && !ordered(&end, &start));
        let at = |t: &str| DateTime::parse_from_rfc3339(t).expect("t").with_timezone(&Utc);
        let w = |now| window(Some(&start), Some(&end), now);
        assert_eq!(w(at("2026-01-31T08:59:59Z")), Window::NotYet(start.clone()));
        assert_eq!(w(at("2026-01-31T09:00:00Z")), Window::Open);
        assert_eq!(w(at("2026-02-01T00:00:00Z")), Window::Over(end.clone()));
        assert_eq!(window(None, None, at("2000-01-01T00:00:00Z")), Window::Open);
        assert!(parse_time("startTime", "tomorrow").is_err());
        assert!(parse_time("startTime", "2026-13-01T00:00:00Z").is_err());
    }
}
