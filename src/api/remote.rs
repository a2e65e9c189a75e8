//! Branches another node of the cluster serves, as this node's handlers need them: a reference
//! column pointing at a grid served elsewhere (its records checked on a write, its values read
//! on a page, its schema when the column is made), a template grid served elsewhere, a view
//! key for a view served elsewhere.
//!
//! Each question goes to the node that serves the branch (`cluster::locate` finds it,
//! `cluster::asks` carries it) and is answered there from its route table and the branch's
//! actor, as the same question is answered for a branch served here. Questions carry record ids
//! in chunks (`IDS_PER_ASK`, `ID_BYTES_PER_ASK`), and an answer that would be larger than what
//! NATS carries is asked again in halves, so no request makes an unbounded message. A node that
//! cannot be asked is `GridError::Elsewhere` (503, `Retry-After: 1`).

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::auth::Scope;
use crate::catalog::model::{CompanyId, ProjectId};
use crate::catalog::routes::{BranchRoute, Routes};
use crate::cluster::asks::{Asker, MAX_ASK_BYTES};
use crate::cluster::locate::Locator;
use crate::cluster::node::ClusterNode;
use crate::cluster::ClusterError;
use crate::grid::error::{GridError, GridResult};
use crate::grid::references::{FindMissing, ReadReferenced, Referenced};
use crate::grid::schema::{ColumnType, Schema};
use crate::grid::value::CellValue;

/// At most this many record ids go in one question.
const IDS_PER_ASK: usize = 4096;

/// At most this many bytes of record ids go in one question.
const ID_BYTES_PER_ASK: usize = 256 * 1024;

/// A branch (or a view of it) another node serves: where it is in the catalogue, and which node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteRoute {
    pub node_id: String,
    pub company_id: CompanyId,
    pub project_id: ProjectId,
    pub database_id: String,
    pub grid_id: String,
    pub branch_id: String,
}

impl RemoteRoute {
    fn of(node_id: &str, route: &BranchRoute) -> RemoteRoute {
        RemoteRoute {
            node_id: node_id.to_owned(),
            company_id: route.company_id,
            project_id: route.project_id,
            database_id: route.database_id.clone(),
            grid_id: route.grid_id.clone(),
            branch_id: route.branch_id.clone(),
        }
    }

    /// The access scope of this branch, seen through `view` when given.
    pub fn scope<'a>(&'a self, view: Option<&'a str>) -> Scope<'a> {
        Scope::of_grid((self.company_id, self.project_id), &self.database_id, &self.grid_id, view)
    }
}

/// What one node asks another about a branch it serves.
#[derive(Debug, Serialize, Deserialize)]
enum Question {
    /// Where a view or branch id is (`Answer::Route`).
    Route { id: String },
    /// A branch's schema.
    Schema { branch: String },
    /// Which of `ids` name no record of the branch.
    FindMissing { branch: String, ids: Vec<String> },
    /// A column's values for record ids.
    ReadReferenced { branch: String, column: String, ids: Vec<String> },
}

/// The answer to a `Question`.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    Route(RemoteRoute),
    Schema(Schema),
    Missing(Vec<String>),
    /// None: the column is gone.
    Referenced(Option<(ColumnType, Vec<CellValue>)>),
    /// The node does not serve the id (any more).
    NotHere,
    /// The answer would be larger than `MAX_ASK_BYTES`: ask for fewer ids.
    TooLarge,
    /// The node could not answer (its actor stopped, the question did not parse).
    Failed(String),
}

/// Asks the nodes serving other branches, and answers their questions about this node's.
#[derive(Debug)]
pub struct Remote {
    me: String,
    asker: Asker,
    locator: Arc<Locator>,
}

impl Remote {
    /// Answers other nodes' questions about what `routes` holds from now on.
    pub fn start(
        node: &ClusterNode,
        locator: Arc<Locator>,
        routes: Arc<Routes>,
    ) -> Result<Remote, ClusterError> {
        let asker = Asker::new(node);
        let me = node.id().to_owned();
        let answering = me.clone();
        asker.answer(node, move |question| {
            let (routes, me) = (routes.clone(), answering.clone());
            async move { Bytes::from(encode(&answer(&routes, &me, &question).await)) }
        })?;
        Ok(Remote { me, asker, locator })
    }

    /// The route of a view or branch id another node serves; None when no node does.
    pub async fn route(&self, id: &str) -> GridResult<Option<RemoteRoute>> {
        for _ in 0..2 {
            let elsewhere = |err: ClusterError| elsewhere(id, err);
            let Some(node) = self.locator.locate(id).await.map_err(elsewhere)? else {
                return Ok(None);
            };
            if node.id == self.me {
                // Served here after all (taken over a moment ago): the caller looks again.
                return Ok(None);
            }
            let question = Question::Route { id: id.to_owned() };
            match self.ask(&node.id, id, &question).await {
                Ok(Answer::Route(route)) => return Ok(Some(route)),
                Ok(Answer::NotHere) => self.locator.forget(id),
                Ok(other) => return Err(unexpected(id, &other)),
                Err(err) => {
                    self.locator.forget_node(&node.id);
                    return Err(err);
                }
            }
        }
        Ok(None)
    }

    /// The schema of the branch `route` names.
    pub async fn schema(&self, route: &RemoteRoute) -> GridResult<Schema> {
        let question = Question::Schema { branch: route.branch_id.clone() };
        match self.ask(&route.node_id, &route.branch_id, &question).await? {
            Answer::Schema(schema) => Ok(schema),
            other => Err(self.failed(route, &other)),
        }
    }

    /// The ids among `ids` that name no record of the branch `route` names.
    pub async fn find_missing(
        &self,
        route: &RemoteRoute,
        ids: Vec<String>,
    ) -> GridResult<Vec<String>> {
        let mut missing = Vec::new();
        for chunk in chunks(ids) {
            let question = Question::FindMissing { branch: route.branch_id.clone(), ids: chunk };
            match self.ask(&route.node_id, &route.branch_id, &question).await? {
                Answer::Missing(found) => missing.extend(found),
                other => return Err(self.failed(route, &other)),
            }
        }
        Ok(missing)
    }

    /// Per (column, ids) request, the column's values for those ids, as `ReadReferenced`
    /// answers for a branch served here.
    pub async fn read_referenced(
        &self,
        route: &RemoteRoute,
        requests: Vec<(String, Vec<String>)>,
    ) -> GridResult<Vec<Option<Referenced>>> {
        let mut answers = Vec::with_capacity(requests.len());
        for (column, ids) in requests {
            answers.push(self.read_column(route, &column, ids).await?);
        }
        Ok(answers)
    }

    /// One column's values for `ids` (None when the column is gone): asked in chunks, a chunk
    /// whose answer is too large asked again in halves, the parts joined in id order.
    async fn read_column(
        &self,
        route: &RemoteRoute,
        column: &str,
        ids: Vec<String>,
    ) -> GridResult<Option<Referenced>> {
        // A stack: the next part to ask is on top (the chunks pushed last to first).
        let mut pending: Vec<Vec<String>> = chunks(ids).into_iter().rev().collect();
        let mut whole: Option<Referenced> = None;
        while let Some(ids) = pending.pop() {
            let question = Question::ReadReferenced {
                branch: route.branch_id.clone(),
                column: column.to_owned(),
                ids: ids.clone(),
            };
            match self.ask(&route.node_id, &route.branch_id, &question).await? {
                Answer::Referenced(None) => return Ok(None),
                Answer::Referenced(Some((column_type, values))) => match &mut whole {
                    Some(so_far) => so_far.values.extend(values),
                    None => whole = Some(Referenced { column_type, values }),
                },
                Answer::TooLarge if ids.len() > 1 => {
                    let mut first = ids;
                    let second = first.split_off(first.len() / 2);
                    pending.push(second);
                    pending.push(first);
                }
                other => return Err(self.failed(route, &other)),
            }
        }
        Ok(whole)
    }

    async fn ask(&self, node_id: &str, about: &str, question: &Question) -> GridResult<Answer> {
        let asked = self.asker.ask(node_id, Bytes::from(encode(question))).await;
        let bytes = asked.map_err(|err| elsewhere(about, err))?;
        serde_json::from_slice(&bytes).map_err(|err| GridError::Elsewhere {
            branch_id: about.to_owned(),
            why: format!("an unreadable answer: {err}"),
        })
    }

    /// A wrong answer about `route`; a node that no longer serves it is forgotten.
    fn failed(&self, route: &RemoteRoute, answer: &Answer) -> GridError {
        if matches!(answer, Answer::NotHere) {
            self.locator.forget(&route.branch_id);
        }
        unexpected(&route.branch_id, answer)
    }
}

fn elsewhere(id: &str, err: ClusterError) -> GridError {
    GridError::Elsewhere { branch_id: id.to_owned(), why: err.to_string() }
}

fn unexpected(id: &str, answer: &Answer) -> GridError {
    let why = match answer {
        Answer::NotHere => "it moved to another node".to_owned(),
        Answer::Failed(why) => why.clone(),
        Answer::TooLarge => "a single value is larger than a message".to_owned(),
        other => format!("an answer of another kind: {other:?}"),
    };
    GridError::Elsewhere { branch_id: id.to_owned(), why }
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|err| {
        serde_json::to_vec(&Answer::Failed(format!("could not encode: {err}"))).unwrap_or_default()
    })
}

/// `ids` in chunks of at most `IDS_PER_ASK` ids and `ID_BYTES_PER_ASK` bytes (one id larger
/// than that goes alone).
fn chunks(ids: Vec<String>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut bytes = 0;
    for id in ids {
        let size = id.len() + 8;
        let full = out.last().is_none_or(|last| {
            last.len() >= IDS_PER_ASK || (bytes + size > ID_BYTES_PER_ASK && !last.is_empty())
        });
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        out.last_mut().expect("a chunk was just pushed").push(id);
    }
    out
}

/// This node's answer to another's question.
async fn answer(routes: &Routes, me: &str, question: &[u8]) -> Answer {
    let question: Question = match serde_json::from_slice(question) {
        Ok(question) => question,
        Err(err) => return Answer::Failed(format!("an unreadable question: {err}")),
    };
    let branch = |id: &str| routes.branch(id);
    let answer = match question {
        Question::Route { id } => match routes.view(&id).or_else(|| routes.branch(&id)) {
            Some(route) => Answer::Route(RemoteRoute::of(me, &route)),
            None => Answer::NotHere,
        },
        Question::Schema { branch: id } => match branch(&id) {
            Some(route) => match route.schema().await {
                Ok(schema) => Answer::Schema(schema),
                Err(err) => Answer::Failed(err.to_string()),
            },
            None => Answer::NotHere,
        },
        Question::FindMissing { branch: id, ids } => match branch(&id) {
            Some(route) => match route.addr.send(FindMissing { ids }).await {
                Ok(missing) => Answer::Missing(missing),
                Err(err) => Answer::Failed(err.to_string()),
            },
            None => Answer::NotHere,
        },
        Question::ReadReferenced { branch: id, column, ids } => match branch(&id) {
            Some(route) => {
                let requests = vec![(column, ids)];
                match route.addr.send(ReadReferenced { requests }).await {
                    Ok(mut read) => {
                        Answer::Referenced(read.pop().flatten().map(|r| (r.column_type, r.values)))
                    }
                    Err(err) => Answer::Failed(err.to_string()),
                }
            }
            None => Answer::NotHere,
        },
    };
    if encode(&answer).len() > MAX_ASK_BYTES {
        return Answer::TooLarge;
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_asked_in_bounded_chunks() {
        let ids: Vec<String> = (0..10_000).map(|i| format!("record-{i}")).collect();
        let split = chunks(ids.clone());
        assert!(split.iter().all(|c| c.len() <= IDS_PER_ASK && !c.is_empty()));
        assert_eq!(split.concat(), ids);
        let long: Vec<String> = (0..4).map(|i| format!("{i}{}", "x".repeat(200_000))).collect();
        let split = chunks(long.clone());
        assert!(split
            .iter()
            .all(|c| c.iter().map(|id| id.len() + 8).sum::<usize>() <= ID_BYTES_PER_ASK
                || c.len() == 1));
        assert_eq!(split.concat(), long);
        assert!(chunks(Vec::new()).is_empty());
    }

    #[test]
    fn questions_and_answers_survive_their_encoding() {
        let schema = Schema::default();
        let bytes = encode(&Answer::Schema(schema));
        assert!(matches!(serde_json::from_slice(&bytes), Ok(Answer::Schema(_))));
        let values = vec![CellValue::Empty, CellValue::Text("ünïcode".into())];
        let bytes = encode(&Answer::Referenced(Some((ColumnType::SingleLine, values.clone()))));
        match serde_json::from_slice(&bytes) {
            Ok(Answer::Referenced(Some((ColumnType::SingleLine, read)))) => {
                assert_eq!(read, values);
            }
            other => panic!("read back {other:?}"),
        }
    }
}
