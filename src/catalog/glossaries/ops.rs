//! The supervisor's glossary operations: create, update, delete a glossary; add, replace and
//! delete an entry; import entries. Each checks the key (`access`), the request and the
//! bounds, commits one change set (the glossary and the chunks it touches) and then
//! publishes the glossary (`index`), so a refused request changes nothing. An import is
//! merged off the supervisor (`prepare_import`) and committed on it if the glossary did not
//! change meanwhile (`commit_glossary_import`).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::error::{GlossaryRefused, MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};
use super::index::{chunk_entries, chunk_key, chunk_of, Entries, GlossaryIndex, Published};
use super::merge::{merge, ImportOption, ImportSummary};
use super::{
    extend_langs, manages, visible, Glossary, GlossaryFields, GlossaryProject, MAX_ENTRIES,
    MAX_GLOSSARIES_PER_COMPANY, MAX_LANGS, MAX_LINKS, SEQUENCE_ID,
};
use crate::auth::{Denied, Principal, Privilege};
use crate::catalog::error::{CatalogError, CatalogResult, Missing};
use crate::catalog::model::{now_timestamp, CompanyId, ProjectId};
use crate::catalog::store::{CatalogChange, EntityKind};
use crate::catalog::supervisor::Supervisor;
use crate::io::glossary::{Concept, LangCode};

/// Glossary `id` as the key may act on it with `needed`: 404 glossaryIsNotFound when unknown
/// or out of the key's sight, 403 without the privilege (or, to `manage`, without reaching
/// everything it is linked to).
pub fn find(
    index: &GlossaryIndex,
    p: &Principal,
    id: u64,
    needed: Privilege,
) -> CatalogResult<Arc<Published>> {
    let not_found = || CatalogError::not_found(Missing::Glossary, id);
    let published = index.get(id).ok_or_else(not_found)?;
    if !visible(p, &published.glossary) {
        return Err(not_found());
    }
    p.require_company_privilege(needed)?;
    if needed >= Privilege::Manage && !manages(p, &published.glossary) {
        return Err(Denied::NoAccess.into());
    }
    Ok(published)
}

fn check_name(name: &str) -> CatalogResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(GlossaryRefused::Name.into());
    }
    Ok(name.to_owned())
}

fn check_langs(langs: &[String]) -> CatalogResult<Vec<LangCode>> {
    let mut codes: Vec<LangCode> = Vec::with_capacity(langs.len().min(MAX_LANGS));
    for lang in langs {
        let code = LangCode::parse(lang).map_err(GlossaryRefused::Lang)?;
        if !codes.contains(&code) {
            codes.push(code);
        }
        if codes.len() > MAX_LANGS {
            return Err(GlossaryRefused::TooManyLangs.into());
        }
    }
    Ok(codes)
}

impl Supervisor {
    fn glossaries(&self) -> &GlossaryIndex {
        &self.routes.glossaries
    }

    /// Checks a glossary's links: each project the company's and reached by the key (404
    /// projectIsNotFound, 403), each database one of that project's (404 databaseIsNotFound).
    fn check_links(
        &self,
        p: &Principal,
        links: Vec<GlossaryProject>,
    ) -> CatalogResult<Vec<GlossaryProject>> {
        if links.len() > MAX_LINKS {
            return Err(GlossaryRefused::TooManyLinks.into());
        }
        let mut checked: Vec<GlossaryProject> = Vec::with_capacity(links.len());
        for mut link in links {
            self.project(p, link.project_id, Privilege::Read)?;
            if checked.iter().any(|l| l.project_id == link.project_id) {
                return Err(GlossaryRefused::ProjectTwice(link.project_id).into());
            }
            if link.database_ids.len() > MAX_LINKS {
                return Err(GlossaryRefused::TooManyLinks.into());
            }
            link.database_ids.dedup();
            for db in &link.database_ids {
                if self.databases.get(db).is_none_or(|d| d.project_id != link.project_id) {
                    return Err(CatalogError::not_found(Missing::Database, db));
                }
            }
            checked.push(link);
        }
        Ok(checked)
    }

    /// Commits `glossary` with `entries`, rewriting the chunks of the `touched` entry ids
    /// (and the last glossary id when it moved), then publishes it.
    fn commit_glossary(
        &mut self,
        glossary: Glossary,
        entries: Entries,
        touched: impl IntoIterator<Item = u64>,
    ) -> CatalogResult<Arc<Published>> {
        let mut changes = glossary_changes(&glossary, &entries, touched);
        if glossary.id > self.glossaries().last_id() {
            changes.push(CatalogChange::put(
                EntityKind::GlossarySequence,
                SEQUENCE_ID,
                &glossary.id,
            ));
        }
        self.commit(&changes)?;
        if glossary.id > self.glossaries().last_id() {
            self.glossaries().set_last_id(glossary.id);
        }
        Ok(self.glossaries().publish(Published::new(glossary, entries)))
    }

    /// Creates a glossary (the `manage` privilege; a key reaching the whole company for one
    /// linked to no project).
    pub fn create_glossary(
        &mut self,
        p: &Principal,
        fields: GlossaryFields,
    ) -> CatalogResult<Glossary> {
        p.require_company_privilege(Privilege::Manage)?;
        let company = p.company_id();
        let count =
            self.glossaries().all().iter().filter(|g| g.glossary.company_id == company).count();
        if count >= MAX_GLOSSARIES_PER_COMPANY {
            return Err(GlossaryRefused::TooManyGlossaries.into());
        }
        let mut glossary = Glossary {
            id: self.glossaries().last_id() + 1,
            company_id: company,
            name: check_name(fields.name.as_deref().unwrap_or_default())?,
            description: String::new(),
            langs: Vec::new(),
            projects: Vec::new(),
            created_time: now_timestamp(),
            last_entry: 0,
        };
        self.apply_fields(p, &mut glossary, fields, &Entries::new())?;
        let published = self.commit_glossary(glossary, Entries::new(), [])?;
        Ok(published.glossary.clone())
    }

    /// Applies what `fields` gives to `glossary` (its name already checked when given).
    fn apply_fields(
        &self,
        p: &Principal,
        glossary: &mut Glossary,
        fields: GlossaryFields,
        entries: &Entries,
    ) -> CatalogResult<()> {
        if let Some(name) = fields.name {
            glossary.name = check_name(&name)?;
        }
        if let Some(description) = fields.description {
            if description.chars().count() > MAX_DESCRIPTION_CHARS {
                return Err(GlossaryRefused::Description.into());
            }
            glossary.description = description;
        }
        if let Some(langs) = fields.langs {
            let langs = check_langs(&langs)?;
            let mut used = langs.clone();
            extend_langs(&mut used, entries.values());
            if let Some(missing) = used.get(langs.len()) {
                return Err(GlossaryRefused::LangInUse(missing.clone()).into());
            }
            glossary.langs = langs;
        }
        if let Some(projects) = fields.projects {
            glossary.projects = self.check_links(p, projects)?;
        }
        if !manages(p, glossary) {
            return Err(Denied::NoAccess.into());
        }
        Ok(())
    }

    /// Updates glossary `id`'s name, description, languages or projects.
    pub fn update_glossary(
        &mut self,
        p: &Principal,
        id: u64,
        fields: GlossaryFields,
    ) -> CatalogResult<Glossary> {
        let published = find(self.glossaries(), p, id, Privilege::Manage)?;
        let mut glossary = published.glossary.clone();
        self.apply_fields(p, &mut glossary, fields, &published.entries)?;
        let published = self.commit_glossary(glossary, published.entries.clone(), [])?;
        Ok(published.glossary.clone())
    }

    /// Deletes glossary `id` and its entries.
    pub fn delete_glossary(&mut self, p: &Principal, id: u64) -> CatalogResult<()> {
        let published = find(self.glossaries(), p, id, Privilege::Manage)?;
        self.commit(&glossary_deletion(&published))?;
        self.glossaries().remove(id);
        Ok(())
    }

    /// The deletions of a company's glossaries (for the company's deletion).
    pub(in crate::catalog) fn company_glossaries_deletion(
        &self,
        company: CompanyId,
    ) -> Vec<CatalogChange> {
        let all = self.glossaries().all();
        all.iter()
            .filter(|g| g.glossary.company_id == company)
            .flat_map(|g| glossary_deletion(g))
            .collect()
    }

    /// The glossaries linked to project `project` (being deleted), without that link.
    pub(in crate::catalog) fn glossaries_unlinked(&self, project: ProjectId) -> Vec<Glossary> {
        let all = self.glossaries().all();
        let linked =
            all.iter().filter(|g| g.glossary.projects.iter().any(|l| l.project_id == project));
        linked
            .map(|g| {
                let mut glossary = g.glossary.clone();
                glossary.projects.retain(|l| l.project_id != project);
                glossary
            })
            .collect()
    }

    /// Publishes glossaries whose change was committed (their entries unchanged).
    pub(in crate::catalog) fn republish_glossaries(&self, glossaries: Vec<Glossary>) {
        for glossary in glossaries {
            let entries =
                self.glossaries().get(glossary.id).map(|g| g.entries.clone()).unwrap_or_default();
            self.glossaries().publish(Published::new(glossary, entries));
        }
    }

    /// Forgets a company's glossaries once their deletion is committed.
    pub(in crate::catalog) fn forget_company_glossaries(&self, company: CompanyId) {
        self.glossaries().remove_company(company);
    }

    /// Adds an entry to glossary `id` (the `write` privilege); answers it with its id.
    pub fn add_glossary_entry(
        &mut self,
        p: &Principal,
        id: u64,
        mut entry: Concept,
    ) -> CatalogResult<Concept> {
        let published = find(self.glossaries(), p, id, Privilege::Write)?;
        entry.check().map_err(GlossaryRefused::Entry)?;
        if published.entries.len() >= MAX_ENTRIES {
            return Err(GlossaryRefused::TooManyEntries(MAX_ENTRIES + 1).into());
        }
        let mut glossary = published.glossary.clone();
        glossary.last_entry += 1;
        entry.id = Some(glossary.last_entry);
        self.put_entry(glossary, published.entries.clone(), entry)
    }

    /// Replaces entry `entry_id` of glossary `id` (404 termIsNotFound when it has none).
    pub fn replace_glossary_entry(
        &mut self,
        p: &Principal,
        id: u64,
        entry_id: u64,
        mut entry: Concept,
    ) -> CatalogResult<Concept> {
        let published = find(self.glossaries(), p, id, Privilege::Write)?;
        if !published.entries.contains_key(&entry_id) {
            return Err(CatalogError::not_found(Missing::Term, entry_id));
        }
        entry.check().map_err(GlossaryRefused::Entry)?;
        entry.id = Some(entry_id);
        self.put_entry(published.glossary.clone(), published.entries.clone(), entry)
    }

    fn put_entry(
        &mut self,
        mut glossary: Glossary,
        mut entries: Entries,
        entry: Concept,
    ) -> CatalogResult<Concept> {
        let id = entry.id.unwrap_or_default();
        extend_langs(&mut glossary.langs, [&entry]);
        if glossary.langs.len() > MAX_LANGS {
            return Err(GlossaryRefused::TooManyLangs.into());
        }
        entries.insert(id, entry.clone());
        self.commit_glossary(glossary, entries, [id])?;
        Ok(entry)
    }

    /// Deletes entry `entry_id` of glossary `id`.
    pub fn delete_glossary_entry(
        &mut self,
        p: &Principal,
        id: u64,
        entry_id: u64,
    ) -> CatalogResult<()> {
        let published = find(self.glossaries(), p, id, Privilege::Write)?;
        let mut entries = published.entries.clone();
        if entries.remove(&entry_id).is_none() {
            return Err(CatalogError::not_found(Missing::Term, entry_id));
        }
        self.commit_glossary(published.glossary.clone(), entries, [entry_id])?;
        Ok(())
    }

    /// Merges imported entries into glossary `id` under `option`, in one change set.
    pub fn import_glossary_entries(
        &mut self,
        p: &Principal,
        id: u64,
        imported: Vec<Concept>,
        option: ImportOption,
    ) -> CatalogResult<ImportSummary> {
        let published = find(self.glossaries(), p, id, Privilege::Write)?;
        let prepared = prepare_import(published, imported, option)?;
        self.commit_prepared(prepared)
    }

    fn commit_prepared(&mut self, prepared: PreparedImport) -> CatalogResult<ImportSummary> {
        self.commit(&prepared.changes)?;
        self.glossaries().publish(Published::new(prepared.glossary, prepared.entries));
        Ok(prepared.summary)
    }

    /// Commits an import prepared off the supervisor, unless the glossary changed since it was
    /// prepared (`Ok(None)`: prepare it again, or import on the supervisor). The key is checked
    /// again: it may have lost its access meanwhile.
    pub fn commit_glossary_import(
        &mut self,
        p: &Principal,
        prepared: PreparedImport,
    ) -> CatalogResult<Option<ImportSummary>> {
        let current = find(self.glossaries(), p, prepared.glossary.id, Privilege::Write)?;
        if !Arc::ptr_eq(&current, &prepared.base) {
            return Ok(None);
        }
        self.commit_prepared(prepared).map(Some)
    }
}

/// The changes that store `glossary` and the chunks of `entries` holding `touched`.
fn glossary_changes(
    glossary: &Glossary,
    entries: &Entries,
    touched: impl IntoIterator<Item = u64>,
) -> Vec<CatalogChange> {
    let mut changes = vec![glossary.change()];
    let chunks: BTreeSet<u64> = touched.into_iter().map(chunk_of).collect();
    for chunk in chunks {
        let key = chunk_key(glossary.id, chunk);
        let held = chunk_entries(entries, chunk);
        changes.push(if held.is_empty() {
            CatalogChange::delete(EntityKind::GlossaryChunk, &key)
        } else {
            CatalogChange::put(EntityKind::GlossaryChunk, &key, &held)
        });
    }
    changes
}

/// An import merged, checked and serialized away from the supervisor, against the glossary
/// as `base` published it; [`Supervisor::commit_glossary_import`] commits it.
pub struct PreparedImport {
    base: Arc<Published>,
    glossary: Glossary,
    entries: Entries,
    changes: Vec<CatalogChange>,
    summary: ImportSummary,
}

/// Merges `imported` into `base` under `option` and checks the glossary's bounds (the
/// expensive part of an import, on any thread: a 100k-entry file takes a tenth of a second,
/// which the supervisor, shared by every company, must not spend).
pub fn prepare_import(
    base: Arc<Published>,
    imported: Vec<Concept>,
    option: ImportOption,
) -> CatalogResult<PreparedImport> {
    let mut glossary = base.glossary.clone();
    let merged = merge(&base.entries, glossary.last_entry, imported, option)
        .map_err(GlossaryRefused::Entry)?;
    if merged.entries.len() > MAX_ENTRIES {
        return Err(GlossaryRefused::TooManyEntries(merged.entries.len()).into());
    }
    extend_langs(&mut glossary.langs, merged.touched.iter().filter_map(|t| merged.entries.get(t)));
    if glossary.langs.len() > MAX_LANGS {
        return Err(GlossaryRefused::TooManyLangs.into());
    }
    glossary.last_entry = merged.last_entry;
    let changes = glossary_changes(&glossary, &merged.entries, merged.touched);
    Ok(PreparedImport { base, glossary, entries: merged.entries, changes, summary: merged.summary })
}

/// The deletion of a glossary and every chunk of its entries.
fn glossary_deletion(published: &Published) -> Vec<CatalogChange> {
    let id = published.glossary.id;
    let chunks: BTreeSet<u64> = published.entries.keys().map(|e| chunk_of(*e)).collect();
    let mut changes = vec![CatalogChange::delete(EntityKind::Glossary, &id.to_string())];
    changes.extend(
        chunks
            .into_iter()
            .map(|c| CatalogChange::delete(EntityKind::GlossaryChunk, &chunk_key(id, c))),
    );
    changes
}
