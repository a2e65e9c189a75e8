//! Which node serves a grid, branch or view id now: asked over core NATS, answered by the node
//! that serves it, remembered per id.
//!
//! Protocol: a request on the subject `<prefix>.locate` whose payload is the id (a token as
//! `check_token` accepts it). Every node subscribes (`Locator::answer`) and replies with its
//! `NodeInfo` as JSON only when its `serves` check holds the id (the server passes one over
//! its route table: a view id, a branch id, or a grid id, which is its master branch's id);
//! the others stay silent. The asker takes the first reply and waits at most `LOCATE_WAIT`: no
//! reply means that nobody serves the id now (unknown, or a grid between two owners).
//!
//! Answers are cached per id (`CACHE_ENTRIES` at most; when full an arbitrary entry makes
//! room) for one lease TTL at most: an owner that stopped answering without failing (paused,
//! or cut off so that forwards to it hang) has lost its lease by then and another node serves
//! the id, which the next request asks about. A caller drops an entry sooner when a forward to
//! its node fails or the node says that it no longer serves the id (`forget`, `forget_node`);
//! the next request asks again. Only answers are cached: an id nobody serves is asked about on
//! each request, so that a grid created a moment ago is found at once.
//!
//! Owns the subscription and the cache; knows nothing of HTTP or the catalogue.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::{Client, RequestErrorKind};
use bytes::Bytes;
use futures_util::StreamExt;

use super::membership::NodeInfo;
use super::node::ClusterNode;
use super::{check_token, unavailable, ClusterError};

/// How long a locate waits for an answer.
pub const LOCATE_WAIT: Duration = Duration::from_millis(250);

/// At most this many ids are remembered.
pub const CACHE_ENTRIES: usize = 16_384;

/// Asks which node serves an id, and answers for this node.
#[derive(Debug)]
pub struct Locator {
    client: Client,
    subject: String,
    me: NodeInfo,
    handle: tokio::runtime::Handle,
    cache: AnswerCache,
}

impl Locator {
    /// A locator over `node`'s NATS connection (nothing subscribed yet: see `answer`).
    pub fn new(node: &ClusterNode) -> Locator {
        Locator {
            client: node.link.jetstream.client(),
            subject: format!("{}.locate", node.link.settings.prefix),
            me: node.me.clone(),
            handle: node.handle(),
            cache: AnswerCache::new(node.link.settings.lease_ttl),
        }
    }

    /// Subscribes to the locate subject (done when this returns: the NATS server has the
    /// subscription) and answers, on the cluster's runtime, every request for an id that
    /// `serves` holds, until the node's runtime stops. Must not run on a cluster thread.
    pub fn answer(
        &self,
        node: &ClusterNode,
        serves: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Result<(), ClusterError> {
        let client = self.client.clone();
        let subject = self.subject.clone();
        let subscriber = node.run(async move {
            let subscriber = client.subscribe(subject).await.map_err(unavailable)?;
            client.flush().await.map_err(unavailable)?;
            Ok::<_, ClusterError>(subscriber)
        })??;
        let reply = Bytes::from(serde_json::to_vec(&self.me).expect("a NodeInfo serializes"));
        let client = self.client.clone();
        let _answering = node.spawn(async move {
            let mut subscriber = subscriber;
            while let Some(message) = subscriber.next().await {
                let Some(to) = message.reply else { continue };
                let asked = std::str::from_utf8(&message.payload).unwrap_or("");
                if check_token("id", asked).is_ok() && serves(asked) {
                    if let Err(err) = client.publish(to, reply.clone()).await {
                        tracing::warn!(error = %err, "locate answer not sent");
                    }
                }
            }
        });
        Ok(())
    }

    /// The node that serves `id` now: from the cache, else asked (`LOCATE_WAIT` at most).
    /// None when nobody answered (or the id cannot be a token); an error when NATS is
    /// unreachable.
    pub async fn locate(&self, id: &str) -> Result<Option<NodeInfo>, ClusterError> {
        if check_token("id", id).is_err() {
            return Ok(None);
        }
        if let Some(known) = self.cache.get(id) {
            return Ok(Some(known));
        }
        let request = async_nats::Request::new()
            .payload(Bytes::copy_from_slice(id.as_bytes()))
            .timeout(Some(LOCATE_WAIT));
        let (client, subject) = (self.client.clone(), self.subject.clone());
        let asked = self.handle.spawn(async move { client.send_request(subject, request).await });
        let answer = match asked.await.map_err(unavailable)? {
            Ok(answer) => answer,
            Err(err) => match err.kind() {
                RequestErrorKind::TimedOut | RequestErrorKind::NoResponders => return Ok(None),
                RequestErrorKind::InvalidSubject
                | RequestErrorKind::MaxPayloadExceeded
                | RequestErrorKind::Other => return Err(unavailable(err)),
            },
        };
        let Ok(node) = serde_json::from_slice::<NodeInfo>(&answer.payload) else {
            tracing::warn!(%id, "unreadable locate answer ignored");
            return Ok(None);
        };
        self.cache.remember(id, node.clone());
        Ok(Some(node))
    }

    /// This node, as it answers.
    pub fn me(&self) -> &NodeInfo {
        &self.me
    }

    /// Drops what is remembered of `id`.
    pub fn forget(&self, id: &str) {
        self.cache.forget(id);
    }

    /// Drops every id remembered on node `node_id` (a forward to it failed).
    pub fn forget_node(&self, node_id: &str) {
        self.cache.forget_node(node_id);
    }
}

/// The answers remembered, by id, each with when it came: `CACHE_ENTRIES` at most, each for
/// `ttl` at most.
#[derive(Debug)]
struct AnswerCache {
    map: Mutex<HashMap<String, (NodeInfo, Instant)>>,
    ttl: Duration,
}

impl AnswerCache {
    fn new(ttl: Duration) -> AnswerCache {
        AnswerCache { map: Mutex::default(), ttl }
    }

    /// The node remembered for `id`, unless it was remembered `ttl` ago or more (then the
    /// entry goes).
    fn get(&self, id: &str) -> Option<NodeInfo> {
        let mut map = self.lock();
        let (node, at) = map.get(id)?;
        if at.elapsed() < self.ttl {
            return Some(node.clone());
        }
        map.remove(id);
        None
    }

    fn remember(&self, id: &str, node: NodeInfo) {
        let mut map = self.lock();
        if map.len() >= CACHE_ENTRIES && !map.contains_key(id) {
            let victim = map.keys().next().cloned();
            if let Some(victim) = victim {
                map.remove(&victim);
            }
        }
        map.insert(id.to_owned(), (node, Instant::now()));
    }

    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    fn forget_node(&self, node_id: &str) {
        self.lock().retain(|_, (node, _)| node.id != node_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (NodeInfo, Instant)>> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str) -> NodeInfo {
        NodeInfo { id: id.into(), advertise: format!("http://{id}") }
    }

    #[test]
    fn the_cache_is_bounded_and_forgets() {
        let cache = AnswerCache::new(Duration::from_secs(60));
        for i in 0..CACHE_ENTRIES + 10 {
            cache.remember(&format!("id{i}"), node(if i % 2 == 0 { "a" } else { "b" }));
        }
        assert_eq!(cache.lock().len(), CACHE_ENTRIES);
        let last = format!("id{}", CACHE_ENTRIES + 9);
        assert_eq!(cache.get(&last), Some(node("b")));
        cache.forget(&last);
        assert_eq!(cache.get(&last), None);
        cache.forget_node("b");
        assert!(cache.lock().values().all(|(n, _)| n.id == "a"));
        cache.remember("x", node("a"));
        cache.remember("x", node("b"));
        assert_eq!(cache.get("x"), Some(node("b")));
    }

    /// An answer is remembered for one lease TTL at most: by then an owner that stopped
    /// answering without failing has lost the id to another node.
    #[test]
    fn an_answer_is_forgotten_after_the_ttl() {
        let cache = AnswerCache::new(Duration::from_millis(20));
        cache.remember("x", node("a"));
        assert_eq!(cache.get("x"), Some(node("a")));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(cache.get("x"), None);
        assert!(cache.lock().is_empty(), "the stale entry goes");
        cache.remember("x", node("b"));
        assert_eq!(cache.get("x"), Some(node("b")));
    }
}
