//! Supervisor operations on translation memories' catalogue entries (`api::transmems`):
//! create, list, look up, update and delete a memory, and find the memories linked to a
//! project. A memory belongs to a company and is linked to projects of it (decisions.md
//! section 13); its segments are not here (`tm::store`).
//!
//! Owns the rules on the catalogue's side: how many memories a company may have, names, which
//! projects may be linked (the company's own, that the key reaches), who may see and change a
//! memory (company keys: `read` to see and look up, `manage` to change; view keys never).

use serde::{Deserialize, Serialize};

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{now_timestamp, CompanyId, ProjectId};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege};

/// Memories a company may have.
pub const MAX_TRANSMEMS_PER_COMPANY: usize = 100;
/// Longest name (the OpenAPI's `maxLength`).
pub const MAX_NAME_CHARS: usize = 100;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// Most projects one memory is linked to.
pub const MAX_PROJECTS: usize = 1000;
/// The name of the memory `GET /v1/transmems` makes for a company that has none.
pub const DEFAULT_TRANSMEM_NAME: &str = "Default translation memory";

/// A translation memory as the catalogue keeps it (the OpenAPI's `TransMem`, plus its company
/// and creation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransMem {
    pub id: String,
    pub company_id: CompanyId,
    pub name: String,
    pub description: String,
    pub project_ids: Vec<ProjectId>,
    pub fuzzy_match: bool,
    pub is_disabled: bool,
    pub is_paused_consuming: bool,
    pub context_lookup: bool,
    /// `upToDate`, `outOfDate` or `unset`.
    pub populate_translation_status: Option<String>,
    pub allow_alternative: bool,
    pub allow_alternative_has_same_record_id: bool,
    pub created_time: String,
    pub created_by: String,
}

/// The fields a create or update sets (each `None` left as it is; a create's defaults apply).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransMemFields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub project_ids: Option<Vec<ProjectId>>,
    pub fuzzy_match: Option<bool>,
    pub is_disabled: Option<bool>,
    pub is_paused_consuming: Option<bool>,
    pub context_lookup: Option<bool>,
    pub populate_translation_status: Option<String>,
    pub allow_alternative: Option<bool>,
    pub allow_alternative_has_same_record_id: Option<bool>,
}

fn check_text(text: &str, what: &str, max: usize, blank_ok: bool) -> CatalogResult<String> {
    if !blank_ok && text.trim().is_empty() {
        return Err(CatalogError::invalid(format!(
            "A translation memory's {what} must not be blank."
        )));
    }
    if text.chars().count() > max {
        return Err(CatalogError::invalid(format!(
            "A translation memory's {what} has at most {max} characters."
        )));
    }
    Ok(text.to_owned())
}

impl TransMemFields {
    /// Applies the fields to `memory`, checked.
    fn apply(self, memory: &mut TransMem) -> CatalogResult<()> {
        if let Some(name) = self.name {
            memory.name = check_text(&name, "name", MAX_NAME_CHARS, false)?;
        }
        if let Some(description) = self.description {
            memory.description =
                check_text(&description, "description", MAX_DESCRIPTION_CHARS, true)?;
        }
        if let Some(mut ids) = self.project_ids {
            if ids.len() > MAX_PROJECTS {
                return Err(CatalogError::invalid(format!(
                    "A translation memory is linked to at most {MAX_PROJECTS} projects."
                )));
            }
            ids.sort_unstable();
            ids.dedup();
            memory.project_ids = ids;
        }
        if let Some(status) = self.populate_translation_status {
            if !matches!(status.as_str(), "upToDate" | "outOfDate" | "unset") {
                return Err(CatalogError::invalid(
                    "populateTranslationStatus is one of upToDate, outOfDate and unset.",
                ));
            }
            memory.populate_translation_status = Some(status);
        }
        let flags = [
            (self.fuzzy_match, &mut memory.fuzzy_match),
            (self.is_disabled, &mut memory.is_disabled),
            (self.is_paused_consuming, &mut memory.is_paused_consuming),
            (self.context_lookup, &mut memory.context_lookup),
            (self.allow_alternative, &mut memory.allow_alternative),
            (
                self.allow_alternative_has_same_record_id,
                &mut memory.allow_alternative_has_same_record_id,
            ),
        ];
        for (value, field) in flags {
            if let Some(value) = value {
                *field = value;
            }
        }
        Ok(())
    }
}

impl Supervisor {
    /// Checks that each project is the key's company's and within its reach.
    fn check_linked(&self, p: &Principal, ids: &[ProjectId]) -> CatalogResult<()> {
        for &id in ids {
            self.project(p, id, Privilege::Read)?;
        }
        Ok(())
    }

    /// Creates a memory with `fields` (a name required); 400 past
    /// `MAX_TRANSMEMS_PER_COMPANY`, 404 projectIsNotFound for a project not the company's.
    pub fn create_transmem(
        &mut self,
        p: &Principal,
        fields: TransMemFields,
    ) -> CatalogResult<TransMem> {
        p.require_company_privilege(Privilege::Manage)?;
        let company = p.company_id();
        if self.transmems.values().filter(|m| m.company_id == company).count()
            >= MAX_TRANSMEMS_PER_COMPANY
        {
            return Err(CatalogError::invalid(format!(
                "A company has at most {MAX_TRANSMEMS_PER_COMPANY} translation memories; delete one first."
            )));
        }
        if fields.name.is_none() {
            return Err(CatalogError::invalid("A translation memory's name is required."));
        }
        self.check_linked(p, fields.project_ids.as_deref().unwrap_or_default())?;
        let mut memory = TransMem {
            id: crate::ids::generate(),
            company_id: company,
            name: String::new(),
            description: String::new(),
            project_ids: Vec::new(),
            fuzzy_match: true,
            is_disabled: false,
            is_paused_consuming: false,
            context_lookup: false,
            populate_translation_status: None,
            allow_alternative: false,
            allow_alternative_has_same_record_id: false,
            created_time: now_timestamp(),
            created_by: p.user().to_owned(),
        };
        fields.apply(&mut memory)?;
        self.put_transmem(memory)
    }

    fn put_transmem(&mut self, memory: TransMem) -> CatalogResult<TransMem> {
        self.commit(&[CatalogChange::put(EntityKind::TransMem, &memory.id, &memory)])?;
        self.transmems.insert(memory.id.clone(), memory.clone());
        Ok(memory)
    }

    /// The company's memories (linked to `project` when given), oldest first.
    pub fn list_transmems(
        &self,
        p: &Principal,
        project: Option<ProjectId>,
    ) -> CatalogResult<Vec<TransMem>> {
        p.require_company_privilege(Privilege::Read)?;
        if let Some(project) = project {
            self.project(p, project, Privilege::Read)?;
        }
        Ok(self
            .transmems
            .values()
            .filter(|m| m.company_id == p.company_id())
            .filter(|m| project.is_none_or(|id| m.project_ids.contains(&id)))
            .cloned()
            .collect())
    }

    /// The hosted service's `listTM`: when the company has no memory yet and the key may create
    /// one, a default memory (`DEFAULT_TRANSMEM_NAME`, linked to no project) is made first and
    /// answered with the rest (`Some` of it); a key that may not create one sees the empty list.
    pub fn list_transmems_or_default(
        &mut self,
        p: &Principal,
        project: Option<ProjectId>,
    ) -> CatalogResult<(Vec<TransMem>, Option<TransMem>)> {
        let listed = self.list_transmems(p, project)?;
        let company = p.company_id();
        let has_any = self.transmems.values().any(|m| m.company_id == company);
        if has_any || p.require_company_privilege(Privilege::Manage).is_err() {
            return Ok((listed, None));
        }
        let fields = TransMemFields {
            name: Some(DEFAULT_TRANSMEM_NAME.to_owned()),
            ..TransMemFields::default()
        };
        let memory = self.create_transmem(p, fields)?;
        let listed = if project.is_none() { vec![memory.clone()] } else { listed };
        Ok((listed, Some(memory)))
    }

    /// Memory `id` for a key with `needed` (404 transMemIsNotFound when unknown or another
    /// company's, 403 without the privilege).
    pub fn transmem(&self, p: &Principal, id: &str, needed: Privilege) -> CatalogResult<TransMem> {
        let memory = self
            .transmems
            .get(id)
            .filter(|m| m.company_id == p.company_id())
            .ok_or_else(|| CatalogError::not_found(Missing::TransMem, id))?;
        p.require_company_privilege(needed)?;
        Ok(memory.clone())
    }

    /// Changes memory `id`'s `fields` (the projects checked as at creation).
    pub fn update_transmem(
        &mut self,
        p: &Principal,
        id: &str,
        fields: TransMemFields,
    ) -> CatalogResult<TransMem> {
        let mut memory = self.transmem(p, id, Privilege::Manage)?;
        self.check_linked(p, fields.project_ids.as_deref().unwrap_or_default())?;
        fields.apply(&mut memory)?;
        self.put_transmem(memory)
    }

    /// Deletes memory `id`'s entry (its segments are the caller's to drop); answers it.
    pub fn delete_transmem(&mut self, p: &Principal, id: &str) -> CatalogResult<TransMem> {
        let memory = self.transmem(p, id, Privilege::Manage)?;
        self.commit(&[CatalogChange::delete(EntityKind::TransMem, id)])?;
        self.transmems.shift_remove(id);
        Ok(memory)
    }

    /// Memory `id` as stored (for its feeding task); `None` once deleted.
    pub fn stored_transmem(&self, id: &str) -> Option<TransMem> {
        self.transmems.get(id).cloned()
    }

    /// Every memory (to open and feed at start).
    pub fn all_transmems(&self) -> Vec<TransMem> {
        self.transmems.values().cloned().collect()
    }

    /// The enabled memories linked to project `project`.
    pub fn project_transmems(&self, project: ProjectId) -> Vec<TransMem> {
        self.transmems
            .values()
            .filter(|m| !m.is_disabled && m.project_ids.contains(&project))
            .cloned()
            .collect()
    }

    /// The master branches of the grids of the projects `projects` (what a memory follows).
    pub fn project_masters(&self, projects: &[ProjectId]) -> Vec<String> {
        self.grids
            .values()
            .filter(|g| projects.contains(&g.project_id))
            .map(|g| g.id.clone())
            .collect()
    }
}
