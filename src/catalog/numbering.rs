//! Integer ids of companies and projects, and the one-time migration of catalogues written when
//! they were strings.
//!
//! The hosted service's `Project.id`, `companyId` and every `projectId` are int64 JSON numbers
//! (its SDK refuses strings), so companies and projects are numbered from 1. `Numbers` holds the
//! last number handed out of each kind; it is persisted with every creation (entity
//! `sequence/ids`), so a number is never reused, even after the newest entity is deleted.
//!
//! `migrate` turns a catalogue of the earlier format (14-character string ids) into the
//! current one: a pure function over the raw JSON entities that returns the change set, which
//! the caller writes in one atomic batch before the catalogue is loaded. Companies and projects
//! are numbered in creation order, and every reference to them is rewritten: `companyId` of
//! every entity, `projectId` of databases and grids, and the project lists of keys' accesses.
//! A catalogue already in the current format gives no changes, so it runs once.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{CompanyId, ProjectId};
use super::store::{CatalogChange, EntityKind};

/// The id of the one `Sequence` entity.
pub const NUMBERS_ID: &str = "ids";

/// The last number handed out to a company and to a project (0: none yet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Numbers {
    pub company: CompanyId,
    pub project: ProjectId,
}

impl Numbers {
    /// The stored numbers, raised to at least the largest ids in use.
    pub fn new(
        stored: Option<Numbers>,
        companies: impl Iterator<Item = CompanyId>,
        projects: impl Iterator<Item = ProjectId>,
    ) -> Numbers {
        let stored = stored.unwrap_or_default();
        Numbers {
            company: companies.fold(stored.company, i64::max),
            project: projects.fold(stored.project, i64::max),
        }
    }

    pub fn next_company(&mut self) -> CompanyId {
        self.company += 1;
        self.company
    }

    pub fn next_project(&mut self) -> ProjectId {
        self.project += 1;
        self.project
    }

    /// The write that persists these numbers.
    pub fn change(&self) -> CatalogChange {
        CatalogChange::put(EntityKind::Sequence, NUMBERS_ID, self)
    }
}

/// The raw catalogue `migrate` reads: per kind, every entity's store id and JSON.
pub type RawCatalog = HashMap<EntityKind, Vec<(String, Vec<u8>)>>;

/// The kinds whose entities carry a `companyId`.
pub const OWNED_KINDS: [EntityKind; 8] = [
    EntityKind::Project,
    EntityKind::Database,
    EntityKind::Grid,
    EntityKind::Key,
    EntityKind::Task,
    EntityKind::Backup,
    EntityKind::Share,
    EntityKind::File,
];

/// Old string ids to new numbers, in creation order (then old id, for equal times).
fn number(entities: &[(String, Value)]) -> HashMap<String, i64> {
    let mut old: Vec<(&str, &str)> = entities
        .iter()
        .filter_map(|(_, v)| {
            let id = v.get("id")?.as_str()?;
            Some((v.get("createdTime").and_then(Value::as_str).unwrap_or(""), id))
        })
        .collect();
    old.sort_unstable();
    old.into_iter().enumerate().map(|(at, (_, id))| (id.to_owned(), at as i64 + 1)).collect()
}

fn parse(raw: &RawCatalog, kind: EntityKind) -> Vec<(String, Value)> {
    raw.get(&kind)
        .into_iter()
        .flatten()
        .filter_map(|(id, json)| Some((id.clone(), serde_json::from_slice(json).ok()?)))
        .collect()
}

/// Replaces a string id field by its number. False when the old id is unknown (a dangling
/// reference); a field that is already a number, or absent, is left as it is.
fn renumber(value: &mut Value, field: &str, numbers: &HashMap<String, i64>) -> bool {
    let Some(slot) = value.get_mut(field) else { return true };
    let Some(old) = slot.as_str() else { return true };
    match numbers.get(old) {
        Some(&n) => {
            *slot = Value::from(n);
            true
        }
        None => false,
    }
}

/// The changes that bring a catalogue of string company and project ids to integer ids, or
/// `None` when it has none. Entities left pointing at a company or project that no longer
/// exists (unreachable before, unreadable after) are removed; a key's access to a deleted
/// project is dropped.
pub fn migrate(raw: &RawCatalog) -> Option<Vec<CatalogChange>> {
    let companies = parse(raw, EntityKind::Company);
    let projects = parse(raw, EntityKind::Project);
    let stringly = |list: &[(String, Value)]| list.iter().any(|(_, v)| v["id"].is_string());
    if !stringly(&companies) && !stringly(&projects) {
        return None;
    }
    let company_numbers = number(&companies);
    let project_numbers = number(&projects);
    let mut changes = Vec::new();
    for (old_id, mut value) in companies {
        if renumber(&mut value, "id", &company_numbers) {
            let new_id = value["id"].to_string();
            changes.push(CatalogChange::delete(EntityKind::Company, &old_id));
            changes.push(put_json(EntityKind::Company, &new_id, &value));
        }
    }
    for kind in OWNED_KINDS {
        for (id, mut value) in parse(raw, kind) {
            let mut known = renumber(&mut value, "companyId", &company_numbers);
            known &= renumber(&mut value, "projectId", &project_numbers);
            if kind == EntityKind::Key {
                renumber_access(&mut value, &project_numbers);
            }
            changes.push(CatalogChange::delete(kind, &id));
            if !known {
                tracing::warn!(?kind, id, "dropping an entity of a deleted company or project");
                continue;
            }
            if kind == EntityKind::Project {
                if !renumber(&mut value, "id", &project_numbers) {
                    continue;
                }
                let new_id = value["id"].to_string();
                changes.push(put_json(kind, &new_id, &value));
            } else {
                changes.push(put_json(kind, &id, &value));
            }
        }
    }
    let numbers =
        Numbers { company: company_numbers.len() as i64, project: project_numbers.len() as i64 };
    changes.push(numbers.change());
    Some(changes)
}

/// A company key's `kind.access.projects`: each old id to its number, unknown ones dropped.
fn renumber_access(key: &mut Value, numbers: &HashMap<String, i64>) {
    let projects = key.pointer_mut("/kind/access/projects");
    let Some(Value::Array(projects)) = projects else { return };
    let renumbered: Vec<Value> = projects
        .iter()
        .filter_map(|p| match p {
            Value::String(old) => numbers.get(old).map(|&n| Value::from(n)),
            other => Some(other.clone()),
        })
        .collect();
    *projects = renumbered;
}

fn put_json(kind: EntityKind, id: &str, value: &Value) -> CatalogChange {
    CatalogChange::put(kind, id, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(entries: Vec<(EntityKind, &str, Value)>) -> RawCatalog {
        let mut raw = RawCatalog::new();
        for (kind, id, value) in entries {
            let json = serde_json::to_vec(&value).expect("json");
            raw.entry(kind).or_default().push((id.to_owned(), json));
        }
        raw
    }

    fn put_of(changes: &[CatalogChange], kind: EntityKind, id: &str) -> Option<Value> {
        changes.iter().find_map(|c| match c {
            CatalogChange::Put { kind: k, id: i, json } if *k == kind && i == id => {
                serde_json::from_slice(json).ok()
            }
            _ => None,
        })
    }

    fn old_catalogue() -> RawCatalog {
        raw(vec![
            (EntityKind::Company, "cb", json!({"id": "cb", "createdTime": "2026-01-02"})),
            (EntityKind::Company, "ca", json!({"id": "ca", "createdTime": "2026-01-01"})),
            (
                EntityKind::Project,
                "pa",
                json!({"id": "pa", "companyId": "ca", "createdTime": "2026-01-01"}),
            ),
            (
                EntityKind::Project,
                "pb",
                json!({"id": "pb", "companyId": "cb", "createdTime": "2026-01-03"}),
            ),
            (EntityKind::Database, "d1", json!({"id": "d1", "companyId": "cb", "projectId": "pb"})),
            (EntityKind::Grid, "g1", json!({"id": "g1", "companyId": "cb", "projectId": "pb"})),
            (
                EntityKind::Key,
                "k1",
                json!({"id": "k1", "companyId": "ca", "kind": {"kind": "company",
                       "access": {"all": false, "projects": ["pa", "gone"], "grids": ["g1"]}}}),
            ),
            (EntityKind::Task, "t1", json!({"id": "t1", "companyId": "gone"})),
            (EntityKind::Share, "v1", json!({"viewId": "v1", "companyId": "cb"})),
        ])
    }

    #[test]
    fn numbers_in_creation_order_and_rewrites_every_reference() {
        let changes = migrate(&old_catalogue()).expect("an old catalogue migrates");
        assert_eq!(put_of(&changes, EntityKind::Company, "1").expect("ca")["id"], json!(1));
        assert_eq!(put_of(&changes, EntityKind::Company, "2").expect("cb")["id"], json!(2));
        assert!(changes.contains(&CatalogChange::delete(EntityKind::Company, "ca")));
        let pb = put_of(&changes, EntityKind::Project, "2").expect("pb");
        assert_eq!((pb["id"].clone(), pb["companyId"].clone()), (json!(2), json!(2)));
        let d1 = put_of(&changes, EntityKind::Database, "d1").expect("d1");
        assert_eq!((d1["companyId"].clone(), d1["projectId"].clone()), (json!(2), json!(2)));
        let g1 = put_of(&changes, EntityKind::Grid, "g1").expect("g1");
        assert_eq!(g1["projectId"], json!(2));
        let k1 = put_of(&changes, EntityKind::Key, "k1").expect("k1");
        assert_eq!(k1["kind"]["access"]["projects"], json!([1]));
        assert_eq!(k1["kind"]["access"]["grids"], json!(["g1"]));
        assert_eq!(put_of(&changes, EntityKind::Share, "v1").expect("v1")["companyId"], json!(2));
        assert!(put_of(&changes, EntityKind::Task, "t1").is_none(), "orphans are dropped");
        let numbers = put_of(&changes, EntityKind::Sequence, NUMBERS_ID).expect("numbers");
        assert_eq!(numbers, json!({"company": 2, "project": 2}));
    }

    #[test]
    fn a_current_catalogue_is_left_alone() {
        let current = raw(vec![
            (EntityKind::Company, "1", json!({"id": 1, "createdTime": ""})),
            (EntityKind::Project, "1", json!({"id": 1, "companyId": 1, "createdTime": ""})),
        ]);
        assert!(migrate(&current).is_none());
        assert!(migrate(&RawCatalog::new()).is_none());
    }

    #[test]
    fn numbers_are_never_reused() {
        let mut numbers = Numbers::new(
            Some(Numbers { company: 3, project: 9 }),
            [2].into_iter(),
            [4, 12].into_iter(),
        );
        assert_eq!((numbers.next_company(), numbers.next_project()), (4, 13));
    }
}
