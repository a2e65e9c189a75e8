//! Where a webhook may deliver: an `http` or `https` URL with a host, at most `MAX_URL_LEN`
//! characters, and no loopback target (127.0.0.0/8, ::1 and IPv4-mapped loopback, `localhost`
//! and its subdomains, the unspecified 0.0.0.0 and ::) unless the server allows them
//! (`--allow-loopback-webhooks`).
//!
//! The URL is checked when the hook is created and again before every attempt; a host name is
//! checked once more where it is resolved (`GuardedResolver`, the delivery client's resolver),
//! so a name that resolves to loopback only later (DNS rebinding) is refused too: the client
//! connects only to the addresses the resolver let through. Knows nothing of hooks or HTTP
//! requests.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::Url;

use crate::error::{Coded, ErrorCode};

/// Longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// Why a URL is not a webhook's target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("url is longer than {MAX_URL_LEN} characters.")]
    TooLong,
    #[error("url is not a URL: {0}.")]
    Unparsable(String),
    #[error("url must be http or https, not \"{0}\".")]
    Scheme(String),
    #[error("url has no host.")]
    NoHost,
    #[error(
        "url targets a loopback address ({0}); the server allows that only when started with \
         --allow-loopback-webhooks."
    )]
    Loopback(String),
}

impl Coded for TargetError {
    fn code(&self) -> ErrorCode {
        match self {
            TargetError::TooLong
            | TargetError::Unparsable(_)
            | TargetError::Scheme(_)
            | TargetError::NoHost
            | TargetError::Loopback(_) => ErrorCode::BadRequest,
        }
    }
}

/// Whether an address is loopback or unspecified (IPv4-mapped IPv6 included).
pub fn is_loopback_ip(ip: IpAddr) -> bool {
    let v4 = |v4: std::net::Ipv4Addr| v4.is_loopback() || v4.is_unspecified();
    match ip {
        IpAddr::V4(addr) => v4(addr),
        IpAddr::V6(addr) => {
            addr.is_loopback() || addr.is_unspecified() || addr.to_ipv4_mapped().is_some_and(v4)
        }
    }
}

/// Whether a host name is `localhost` or one of its subdomains (resolved to loopback by
/// convention, RFC 6761).
fn is_loopback_name(host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// Parses and checks a webhook's URL.
pub fn parse_target(text: &str, allow_loopback: bool) -> Result<Url, TargetError> {
    if text.len() > MAX_URL_LEN {
        return Err(TargetError::TooLong);
    }
    let url = Url::parse(text).map_err(|e| TargetError::Unparsable(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TargetError::Scheme(url.scheme().to_owned()));
    }
    let loopback = match url.host() {
        None => return Err(TargetError::NoHost),
        Some(url::Host::Domain(name)) => is_loopback_name(name),
        Some(url::Host::Ipv4(ip)) => is_loopback_ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_loopback_ip(IpAddr::V6(ip)),
    };
    if loopback && !allow_loopback {
        return Err(TargetError::Loopback(url.host_str().unwrap_or_default().to_owned()));
    }
    Ok(url)
}

/// The delivery client's resolver: the system's, less the loopback addresses unless allowed.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_loopback: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_loopback = self.allow_loopback;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|addr| allow_loopback || !is_loopback_ip(addr.ip()))
                .collect();
            if found.is_empty() {
                let refused = TargetError::Loopback(format!("{host} resolves to none other"));
                return Err(Box::new(refused) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_are_targets() {
        assert!(parse_target("https://hooks.example.com/in?x=1", false).is_ok());
        assert!(parse_target("http://10.0.0.5:8080/", false).is_ok());
        assert_eq!(
            parse_target("ftp://example.com/", false),
            Err(TargetError::Scheme("ftp".into()))
        );
        assert!(matches!(parse_target("not a url", false), Err(TargetError::Unparsable(_))));
        assert!(matches!(parse_target("file:///etc/passwd", false), Err(TargetError::Scheme(_))));
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(parse_target(&long, false), Err(TargetError::TooLong));
    }

    #[test]
    fn loopback_targets_need_the_flag() {
        for url in [
            "http://127.0.0.1:9/",
            "http://127.8.9.10/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://0.0.0.0/",
            "http://[::]/",
        ] {
            assert!(matches!(parse_target(url, false), Err(TargetError::Loopback(_))), "{url}");
            assert!(parse_target(url, true).is_ok(), "{url}");
        }
        assert!(parse_target("http://localhost.example.com/", false).is_ok());
    }

    #[tokio::test]
    async fn the_resolver_drops_loopback_addresses_unless_allowed() {
        use std::str::FromStr;
        let name = || Name::from_str("localhost").expect("a name");
        let refused = GuardedResolver { allow_loopback: false }.resolve(name()).await;
        let err = refused.err().expect("localhost resolves to loopback only");
        assert!(err.to_string().contains("loopback"), "{err}");
        let allowed = GuardedResolver { allow_loopback: true }.resolve(name()).await;
        let addrs: Vec<SocketAddr> = allowed.expect("resolves").collect();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| is_loopback_ip(a.ip())), "{addrs:?}");
    }
}
