//! Questions one node asks another directly, over core NATS request/reply: what a request
//! served here needs to know of a grid another node serves (a referenced grid's records, a
//! template's schema, a view's place in the catalogue).
//!
//! Protocol: a request on the subject `<prefix>.ask.<node id>` whose payload is the question;
//! the node answers with the answer's bytes. What they hold is the caller's (`api::remote`):
//! this module only carries bytes. Both are at most `MAX_ASK_BYTES` (NATS's default payload
//! limit is 1 MiB): the caller splits what it asks, and says in its answer encoding when an
//! answer would be larger. A node that does not answer within `ASK_WAIT`, or that is gone (no
//! subscriber), is unavailable.
//!
//! Knows nothing of HTTP, grids or the catalogue.

use std::future::Future;
use std::time::Duration;

use async_nats::{Client, RequestErrorKind};
use bytes::Bytes;
use futures_util::StreamExt;

use super::node::ClusterNode;
use super::{check_token, unavailable, ClusterError};

/// How long a question waits for its answer.
pub const ASK_WAIT: Duration = Duration::from_secs(5);

/// The largest question or answer carried.
pub const MAX_ASK_BYTES: usize = 768 * 1024;

/// At most this many questions are answered at once by one node; the others wait in NATS's
/// subscription buffer (and time out there when the node is that busy).
const ANSWERING_AT_ONCE: usize = 32;

/// Asks other nodes, and answers for this one.
#[derive(Debug, Clone)]
pub struct Asker {
    client: Client,
    prefix: String,
    handle: tokio::runtime::Handle,
}

impl Asker {
    /// An asker over `node`'s NATS connection (nothing subscribed yet: see `answer`).
    pub fn new(node: &ClusterNode) -> Asker {
        Asker {
            client: node.link.jetstream.client(),
            prefix: node.link.settings.prefix.clone(),
            handle: node.handle(),
        }
    }

    fn subject(&self, node_id: &str) -> Result<String, ClusterError> {
        check_token("node", node_id)?;
        Ok(format!("{}.ask.{node_id}", self.prefix))
    }

    /// Subscribes to this node's subject (done when this returns) and answers every question
    /// with what `answer` makes of it, on the cluster's runtime, until the node's runtime
    /// stops. A question larger than `MAX_ASK_BYTES` is not answered. Must not run on a
    /// cluster thread.
    pub fn answer<F, Fut>(&self, node: &ClusterNode, answer: F) -> Result<(), ClusterError>
    where
        F: Fn(Bytes) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Bytes> + Send + 'static,
    {
        let client = self.client.clone();
        let subject = self.subject(node.id())?;
        let subscriber = node.run(async move {
            let subscriber = client.subscribe(subject).await.map_err(unavailable)?;
            client.flush().await.map_err(unavailable)?;
            Ok::<_, ClusterError>(subscriber)
        })??;
        let client = self.client.clone();
        let _answering = node.spawn(async move {
            let answer = std::sync::Arc::new(answer);
            let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(ANSWERING_AT_ONCE));
            let mut subscriber = subscriber;
            while let Some(message) = subscriber.next().await {
                let Some(to) = message.reply else { continue };
                if message.payload.len() > MAX_ASK_BYTES {
                    continue;
                }
                let Ok(slot) = slots.clone().acquire_owned().await else { break };
                let (answer, client) = (answer.clone(), client.clone());
                tokio::spawn(async move {
                    let bytes = answer(message.payload).await;
                    if let Err(err) = client.publish(to, bytes).await {
                        tracing::warn!(error = %err, "an answer to another node was not sent");
                    }
                    drop(slot);
                });
            }
        });
        Ok(())
    }

    /// Asks node `node_id` `question` and waits `ASK_WAIT` at most for its answer.
    pub async fn ask(&self, node_id: &str, question: Bytes) -> Result<Bytes, ClusterError> {
        if question.len() > MAX_ASK_BYTES {
            return Err(ClusterError::Unavailable(format!(
                "a question of {} bytes is larger than {MAX_ASK_BYTES}",
                question.len()
            )));
        }
        let subject = self.subject(node_id)?;
        let request = async_nats::Request::new().payload(question).timeout(Some(ASK_WAIT));
        let client = self.client.clone();
        let asked = self.handle.spawn(async move { client.send_request(subject, request).await });
        match asked.await.map_err(unavailable)? {
            Ok(answer) => Ok(answer.payload),
            Err(err) => match err.kind() {
                RequestErrorKind::TimedOut => Err(ClusterError::Unavailable(format!(
                    "node {node_id} did not answer within {ASK_WAIT:?}"
                ))),
                RequestErrorKind::NoResponders => {
                    Err(ClusterError::Unavailable(format!("node {node_id} is not reachable")))
                }
                RequestErrorKind::InvalidSubject
                | RequestErrorKind::MaxPayloadExceeded
                | RequestErrorKind::Other => Err(unavailable(err)),
            },
        }
    }
}
