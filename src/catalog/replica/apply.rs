//! Another node's change set applied to this node's catalogue: sled's copy (as the journal's
//! replay does) and the supervisor's memory with the side effects `Supervisor::load` has (key
//! ring, tiers, share tokens, glossaries, CDN routes, grid defaults, webhook logs, creation
//! order). A delete of a company, project, database, grid or branch does what the local delete
//! does after its commit (`forget_*`: actors stopped, routes removed). A put of a grid or a
//! branch only records it: no actor is started here.
//!
//! One function per family of kinds: tenancy (companies, projects, databases, keys, numbers),
//! grid parts (grids, branches, backups, files, merge choices, shares), services (tasks,
//! webhooks and their logs, CDNs, translation memories) and glossaries.

use std::collections::BTreeMap;
use std::hash::Hash;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::de::DeserializeOwned;

use super::super::glossaries::index::{parse_chunk_key, Entries, Published};
use super::super::glossaries::Glossary;
use super::super::model::{Company, DeliveryAttempt, Grid, Share};
use super::super::numbering::Numbers;
use super::super::store::{CatalogChange, EntityKind};
use super::super::supervisor::Supervisor;
use super::super::webhooks::LOG_LEN;
use crate::auth::ApiKey;
use crate::io::glossary::Concept;

/// One change taken apart: its kind, id, and the entity's JSON for a put.
struct Change<'a> {
    kind: EntityKind,
    id: &'a str,
    json: Option<&'a [u8]>,
}

impl<'a> Change<'a> {
    fn of(change: &'a CatalogChange) -> Change<'a> {
        match change {
            CatalogChange::Put { kind, id, json } => Change { kind: *kind, id, json: Some(json) },
            CatalogChange::Delete { kind, id } => Change { kind: *kind, id, json: None },
        }
    }

    /// The put entity decoded; None for a delete or (logged) JSON that does not decode.
    fn value<T: DeserializeOwned>(&self) -> Option<T> {
        let json = self.json?;
        serde_json::from_slice(json)
            .map_err(|err| {
                tracing::error!(kind = ?self.kind, id = self.id, error = %err,
                    "another node's catalogue entity does not decode; skipped");
            })
            .ok()
    }
}

/// Puts or removes an entity of a map keyed by `key`.
fn upsert<K: Hash + Eq, T: DeserializeOwned>(map: &mut IndexMap<K, T>, key: K, change: &Change) {
    match change.json {
        Some(_) => {
            if let Some(value) = change.value() {
                map.insert(key, value);
            }
        }
        None => {
            map.shift_remove(&key);
        }
    }
}

impl Supervisor {
    /// Writes another node's change set to sled's copy at the WAL's current position (a
    /// cluster node's local copy is rebuilt from the log at each start, so it is not logged
    /// locally).
    pub(super) fn store_remote(&self, changes: &[CatalogChange]) {
        let lsn = self.durability.wal.last_lsn();
        if let Err(err) = self.store.apply_at(changes, lsn) {
            tracing::error!(error = %err, "writing another node's catalogue change to sled failed");
            self.tree_stale.store(true, Ordering::SeqCst);
        }
    }

    /// Applies another node's change set to memory.
    pub(super) fn apply_to_memory(&mut self, changes: &[CatalogChange]) {
        let mut glossaries = Vec::new();
        for change in changes.iter().map(Change::of) {
            match change.kind {
                EntityKind::Company
                | EntityKind::Project
                | EntityKind::Database
                | EntityKind::Key
                | EntityKind::Sequence => self.apply_tenancy(&change),
                EntityKind::Grid
                | EntityKind::Branch
                | EntityKind::Backup
                | EntityKind::File
                | EntityKind::MergeResolve
                | EntityKind::Share => self.apply_grid_part(&change),
                EntityKind::Task
                | EntityKind::Webhook
                | EntityKind::WebhookAttempt
                | EntityKind::Cdn
                | EntityKind::TransMem => self.apply_service(&change),
                EntityKind::Glossary | EntityKind::GlossaryChunk | EntityKind::GlossarySequence => {
                    glossaries.push(change)
                }
            }
        }
        self.apply_glossaries(&glossaries);
        if changes.iter().any(|c| matches!(c, CatalogChange::Put { .. })) {
            self.sort_by_creation();
        }
    }

    fn apply_tenancy(&mut self, change: &Change) {
        match change.kind {
            EntityKind::Company => match change.value::<Company>() {
                Some(company) => {
                    self.keyring.set_tier(company.id, company.tier);
                    self.companies.insert(company.id, company);
                }
                None if change.json.is_none() => {
                    if let Ok(id) = change.id.parse() {
                        self.forget_company(id);
                    }
                }
                None => {}
            },
            EntityKind::Project => match (change.json, change.id.parse()) {
                (None, Ok(id)) => self.forget_project(id),
                (_, Ok(id)) => upsert(&mut self.projects, id, change),
                (_, Err(_)) => {}
            },
            EntityKind::Database if change.json.is_none() => self.forget_database(change.id),
            EntityKind::Database => upsert(&mut self.databases, change.id.to_owned(), change),
            EntityKind::Key => self.apply_key(change),
            EntityKind::Sequence => {
                if let Some(numbers) = change.value::<Numbers>() {
                    self.numbers.company = self.numbers.company.max(numbers.company);
                    self.numbers.project = self.numbers.project.max(numbers.project);
                }
            }
            other => tracing::error!(kind = ?other, "not a tenancy entity"),
        }
    }

    fn apply_key(&mut self, change: &Change) {
        match change.value::<ApiKey>() {
            Some(key) => {
                if let Some(old) = self.keys.get(&key.id) {
                    self.keyring.remove(&old.hash);
                }
                self.keyring.insert(key.clone());
                self.keys.insert(key.id.clone(), key);
            }
            None if change.json.is_none() => {
                if let Some(old) = self.keys.shift_remove(change.id) {
                    self.keyring.remove(&old.hash);
                }
            }
            None => {}
        }
    }

    fn apply_grid_part(&mut self, change: &Change) {
        let id = change.id.to_owned();
        match change.kind {
            EntityKind::Grid => match change.value::<Grid>() {
                Some(grid) => {
                    self.routes.publish_defaults(&grid);
                    self.grids.insert(id, grid);
                }
                None if change.json.is_none() => self.forget_grid(change.id),
                None => {}
            },
            EntityKind::Branch if change.json.is_none() => self.forget_branch(change.id),
            EntityKind::Branch => upsert(&mut self.branches, id, change),
            EntityKind::Backup => {
                if change.json.is_none() && self.backups.contains_key(change.id) {
                    self.durability.delete_backup(change.id);
                }
                upsert(&mut self.backups, id, change);
            }
            EntityKind::File => {
                if change.json.is_none() && self.files.contains_key(change.id) {
                    let path = self.files_dir.join(change.id);
                    super::super::files::remove_in_background(vec![path], format!("file {id}"));
                }
                upsert(&mut self.files, id, change);
            }
            EntityKind::MergeResolve => match change.value() {
                Some(resolve) => {
                    self.resolves.insert(id, resolve);
                }
                None => {
                    self.resolves.remove(change.id);
                }
            },
            EntityKind::Share => {
                let share: Option<Share> = change.value();
                match share {
                    Some(share) => self.shares.insert(id, share),
                    None => self.shares.shift_remove(change.id),
                };
                self.index_share_tokens();
            }
            other => tracing::error!(kind = ?other, "not a grid's entity"),
        }
    }

    fn apply_service(&mut self, change: &Change) {
        let id = change.id.to_owned();
        match change.kind {
            EntityKind::Task => upsert(&mut self.tasks, id, change),
            EntityKind::Webhook => {
                if change.json.is_none() {
                    self.webhook_logs.remove(change.id);
                }
                upsert(&mut self.webhooks, id, change);
            }
            EntityKind::WebhookAttempt => self.apply_attempt(change),
            EntityKind::Cdn => match change.value() {
                Some(cdn) => {
                    self.routes.cdns.insert(id, Arc::new(cdn));
                }
                None => {
                    self.routes.cdns.remove(change.id);
                }
            },
            EntityKind::TransMem => upsert(&mut self.transmems, id, change),
            other => tracing::error!(kind = ?other, "not a service entity"),
        }
    }

    /// A webhook's delivery attempt added (its log kept at `LOG_LEN`, in sequence order) or
    /// removed (by its key, `<hook>/<sequence>`).
    fn apply_attempt(&mut self, change: &Change) {
        match change.value::<DeliveryAttempt>() {
            Some(attempt) => {
                let log = self.webhook_logs.entry(attempt.hook_id.clone()).or_default();
                log.retain(|a| a.sequence != attempt.sequence);
                let at = log.partition_point(|a| a.sequence < attempt.sequence);
                log.insert(at, attempt);
                while log.len() > LOG_LEN {
                    log.pop_front();
                }
            }
            None if change.json.is_none() => {
                for log in self.webhook_logs.values_mut() {
                    log.retain(|a| a.key() != change.id);
                }
            }
            None => {}
        }
    }

    /// Glossary changes, per glossary: its entity, its chunks of entries, the last id handed
    /// out; each touched glossary is published again with its entries as they now are.
    fn apply_glossaries(&mut self, changes: &[Change]) {
        let index = self.routes.glossaries.clone();
        let mut touched: BTreeMap<u64, (Option<Glossary>, Entries)> = BTreeMap::new();
        for change in changes {
            match change.kind {
                EntityKind::GlossarySequence => {
                    if let Some(last) = change.value::<u64>() {
                        index.set_last_id(index.last_id().max(last));
                    }
                }
                EntityKind::Glossary => {
                    let Ok(id) = change.id.parse::<u64>() else { continue };
                    if change.json.is_none() {
                        index.remove(id);
                        touched.remove(&id);
                        continue;
                    }
                    let Some(glossary) = change.value::<Glossary>() else { continue };
                    let slot = touched.entry(id).or_insert_with(|| current(&index, id));
                    slot.0 = Some(glossary);
                }
                EntityKind::GlossaryChunk => {
                    let Some((id, chunk)) = parse_chunk_key(change.id) else { continue };
                    let slot = touched.entry(id).or_insert_with(|| current(&index, id));
                    let chunk_entries: Vec<Concept> = change.value().unwrap_or_default();
                    replace_chunk(&mut slot.1, chunk, chunk_entries);
                }
                other => tracing::error!(kind = ?other, "not a glossary entity"),
            }
        }
        for (_, (glossary, entries)) in touched {
            if let Some(glossary) = glossary {
                index.publish(Published::new(glossary, entries));
            }
        }
    }
}

/// A glossary as published now (None and no entries when it is new here).
fn current(
    index: &super::super::glossaries::index::GlossaryIndex,
    id: u64,
) -> (Option<Glossary>, Entries) {
    match index.get(id) {
        Some(published) => (Some(published.glossary.clone()), published.entries.clone()),
        None => (None, Entries::new()),
    }
}

/// Replaces the entries of chunk `chunk` with `chunk_entries` (none: the chunk was removed).
fn replace_chunk(entries: &mut Entries, chunk: u64, chunk_entries: Vec<Concept>) {
    use super::super::glossaries::index::chunk_of;
    let stale: Vec<u64> = entries.keys().copied().filter(|id| chunk_of(*id) == chunk).collect();
    for id in stale {
        entries.remove(&id);
    }
    for entry in chunk_entries {
        if let Some(id) = entry.id {
            entries.insert(id, entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concept(id: u64, term: &str) -> Concept {
        serde_json::from_value(serde_json::json!({"id": id, "terms": {"en": [term]}}))
            .expect("a concept")
    }

    /// A chunk's entries replace exactly that chunk's (an emptied chunk removes them) and leave
    /// the other chunks alone.
    #[test]
    fn a_chunk_replaces_only_its_own_entries() {
        let last_of_first = super::super::super::glossaries::index::CHUNK_ENTRIES - 1;
        let mut entries = Entries::new();
        for id in [1, 2, last_of_first + 1] {
            entries.insert(id, concept(id, "old"));
        }
        replace_chunk(&mut entries, 0, vec![concept(2, "new"), concept(3, "added")]);
        let ids: Vec<u64> = entries.keys().copied().collect();
        assert_eq!(ids, vec![2, 3, last_of_first + 1]);
        replace_chunk(&mut entries, 1, Vec::new());
        assert_eq!(entries.keys().copied().collect::<Vec<_>>(), vec![2, 3]);
    }

    #[test]
    fn an_undecodable_put_is_skipped_and_a_delete_has_no_value() {
        let put = CatalogChange::Put { kind: EntityKind::Key, id: "k".into(), json: b"{".to_vec() };
        assert!(Change::of(&put).value::<ApiKey>().is_none());
        let delete = CatalogChange::delete(EntityKind::Key, "k");
        assert!(Change::of(&delete).value::<ApiKey>().is_none());
        assert!(Change::of(&delete).json.is_none());
    }
}
