//! Supervisor operations on grid settings (`/v1/grids/<id>/settings`): the defaults a grid
//! gives what is created in it, its metadata, and its file categories with their files.
//!
//! Settings live in the grid's catalogue entry (`model::GridSettings`), so every change is one
//! catalogue write. A category's files are uploaded files (`model::FileMeta` with the
//! category's id) whose bytes are under `<data dir>/files` like a cell's; the collector leaves
//! them alone, and they go with their category or their grid. The defaults are published in
//! the route table (`Routes::grid_defaults`) for the handlers that add records and create
//! columns, which read them without a round trip here.

use std::sync::Arc;

use indexmap::IndexMap;

use super::error::{CatalogError, CatalogResult, Missing};
use super::grids::check_metadata;
use super::model::{now_timestamp, FileCategory, FileMeta, Grid, GridSettings};
use super::routes::{GridDefaults, Routes};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{Principal, Privilege};
use crate::grid::schema::DateTimeFormat;
use crate::grid::value::SourceStatus;
use crate::ids;

/// The most file categories a grid has.
pub const MAX_CATEGORIES: usize = 100;
/// The most files a category holds.
pub const MAX_CATEGORY_FILES: usize = 1000;
/// The longest category name, in characters.
const MAX_NAME_CHARS: usize = 255;
/// The longest part of a date and time format, in characters.
const MAX_FORMAT_CHARS: usize = 64;

/// A change of a grid's settings (the OpenAPI's `UpdateGridSetting`); absent fields are kept.
#[derive(Debug, Default)]
pub struct SettingsPatch {
    pub default_source_language_status: Option<String>,
    pub default_date_time_format: Option<DateTimeFormat>,
    pub translator_can_view_automations: Option<bool>,
    /// A null value removes that key.
    pub metadata: Option<IndexMap<String, Option<String>>>,
}

impl Routes {
    /// Publishes (or withdraws, for the defaults) what `grid`'s settings make the default.
    pub fn publish_defaults(&self, grid: &Grid) {
        let settings = &grid.settings;
        let defaults = GridDefaults {
            source_status: SourceStatus::parse(&settings.default_source_language_status)
                .unwrap_or_default(),
            date_time_format: settings.default_date_time_format.clone(),
        };
        if defaults == GridDefaults::default() {
            self.grid_defaults.remove(&grid.id);
        } else {
            self.grid_defaults.insert(grid.id.clone(), Arc::new(defaults));
        }
    }
}

/// A category name: trimmed, 1 to `MAX_NAME_CHARS` characters.
fn category_name(name: &str) -> CatalogResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(CatalogError::invalid(format!(
            "A category name must be 1 to {MAX_NAME_CHARS} characters."
        )));
    }
    Ok(name.to_owned())
}

fn check_format(format: &DateTimeFormat) -> CatalogResult<()> {
    let parts = [
        ("dateFormat", &format.date_format),
        ("timeFormat", &format.time_format),
        ("zoneOffset", &format.zone_offset),
    ];
    for (name, part) in parts {
        if part.as_ref().is_some_and(|p| p.chars().count() > MAX_FORMAT_CHARS) {
            return Err(CatalogError::invalid(format!(
                "defaultDateTimeFormat.{name} is longer than {MAX_FORMAT_CHARS} characters."
            )));
        }
    }
    Ok(())
}

/// Notes that `user` changed `settings` now.
fn stamp(settings: &mut GridSettings, user: &str) {
    settings.created_by.get_or_insert_with(|| user.to_owned());
    settings.last_modified_by = Some(user.to_owned());
    settings.last_modified_time = Some(now_timestamp());
}

impl Supervisor {
    /// Grid `id` for a settings call needing `needed`.
    fn settings_grid(&self, p: &Principal, id: &str, needed: Privilege) -> CatalogResult<Grid> {
        self.grid(p, id, needed).cloned()
    }

    /// Writes `grid` (its settings changed by `user`) and publishes its defaults.
    fn store_settings(&mut self, mut grid: Grid, user: &str) -> CatalogResult<Grid> {
        stamp(&mut grid.settings, user);
        self.commit(&[CatalogChange::put(EntityKind::Grid, &grid.id, &grid)])?;
        self.routes.publish_defaults(&grid);
        self.grids.insert(grid.id.clone(), grid.clone());
        Ok(grid)
    }

    /// The grid whose settings are read.
    pub fn grid_settings(&self, p: &Principal, id: &str) -> CatalogResult<Grid> {
        self.settings_grid(p, id, Privilege::Read)
    }

    /// Changes a grid's settings; nothing changes when any field is refused.
    pub fn update_settings(
        &mut self,
        p: &Principal,
        id: &str,
        patch: SettingsPatch,
    ) -> CatalogResult<Grid> {
        let mut grid = self.settings_grid(p, id, Privilege::Manage)?;
        let settings: &mut GridSettings = &mut grid.settings;
        if let Some(status) = patch.default_source_language_status {
            if SourceStatus::parse(&status).is_none() {
                return Err(CatalogError::invalid(format!(
                    "defaultSourceLanguageStatus \"{}\" is invalid; expected unset, \
                     doNotTranslate, notReadyForTranslation, readyForTranslation, locked or \
                     lockAllLanguages.",
                    crate::io::csv_import::clip(&status, 64)
                )));
            }
            settings.default_source_language_status = status;
        }
        if let Some(format) = patch.default_date_time_format {
            check_format(&format)?;
            settings.default_date_time_format = Some(format);
        }
        if let Some(flag) = patch.translator_can_view_automations {
            settings.translator_can_view_automations = flag;
        }
        if let Some(changes) = patch.metadata {
            for (key, value) in changes {
                match value {
                    Some(value) => {
                        settings.metadata.insert(key, value);
                    }
                    None => {
                        settings.metadata.shift_remove(&key);
                    }
                }
            }
            check_metadata(&settings.metadata)?;
        }
        self.store_settings(grid, p.user())
    }

    /// A category of `grid` (404 categoryIsNotFound).
    fn category<'a>(grid: &'a Grid, category_id: &str) -> CatalogResult<&'a FileCategory> {
        grid.settings
            .categories
            .iter()
            .find(|c| c.id == category_id)
            .ok_or_else(|| CatalogError::not_found(Missing::Category, category_id))
    }

    pub fn create_category(
        &mut self,
        p: &Principal,
        grid_id: &str,
        name: &str,
    ) -> CatalogResult<FileCategory> {
        let mut grid = self.settings_grid(p, grid_id, Privilege::Manage)?;
        let name = category_name(name)?;
        if grid.settings.categories.len() >= MAX_CATEGORIES {
            return Err(CatalogError::invalid(format!(
                "A grid has at most {MAX_CATEGORIES} file categories."
            )));
        }
        let category = FileCategory { id: ids::generate(), name };
        grid.settings.categories.push(category.clone());
        self.store_settings(grid, p.user())?;
        Ok(category)
    }

    pub fn rename_category(
        &mut self,
        p: &Principal,
        grid_id: &str,
        category_id: &str,
        name: &str,
    ) -> CatalogResult<FileCategory> {
        let mut grid = self.settings_grid(p, grid_id, Privilege::Manage)?;
        let name = category_name(name)?;
        let category = (grid.settings.categories.iter_mut())
            .find(|c| c.id == category_id)
            .ok_or_else(|| CatalogError::not_found(Missing::Category, category_id))?;
        category.name = name;
        let renamed = category.clone();
        self.store_settings(grid, p.user())?;
        Ok(renamed)
    }

    /// Deletes a category and its files (their metadata in the same catalogue write, their
    /// bytes after it).
    pub fn delete_category(
        &mut self,
        p: &Principal,
        grid_id: &str,
        category_id: &str,
    ) -> CatalogResult<()> {
        let mut grid = self.settings_grid(p, grid_id, Privilege::Manage)?;
        Self::category(&grid, category_id)?;
        grid.settings.categories.retain(|c| c.id != category_id);
        let files: Vec<String> =
            self.category_files(grid_id, category_id).map(|f| f.id.clone()).collect();
        stamp(&mut grid.settings, p.user());
        let mut changes = vec![CatalogChange::put(EntityKind::Grid, grid_id, &grid)];
        changes.extend(files.iter().map(|id| CatalogChange::delete(EntityKind::File, id)));
        self.commit(&changes)?;
        self.grids.insert(grid_id.to_owned(), grid);
        self.drop_files(&files);
        Ok(())
    }

    fn category_files<'a>(
        &'a self,
        grid_id: &'a str,
        category_id: &'a str,
    ) -> impl Iterator<Item = &'a FileMeta> + 'a {
        self.files
            .values()
            .filter(move |f| f.grid_id == grid_id && f.category_id.as_deref() == Some(category_id))
    }

    /// Forgets files whose metadata deletion is durable and removes their bytes.
    fn drop_files(&mut self, ids: &[String]) {
        let mut paths = Vec::with_capacity(ids.len());
        for id in ids {
            self.files.shift_remove(id);
            paths.push(self.files_dir.join(id));
        }
        super::files::remove_in_background(paths, "a settings category".to_owned());
    }

    /// The company of a grid whose category `category_id` may receive a file from `p`.
    pub fn category_upload(
        &self,
        p: &Principal,
        grid_id: &str,
        category_id: &str,
    ) -> CatalogResult<crate::catalog::model::CompanyId> {
        let grid = self.grid(p, grid_id, Privilege::Manage)?;
        Self::category(grid, category_id)?;
        Ok(grid.company_id)
    }

    /// Records a file (its bytes already durable under its id) in a category of its grid.
    pub fn add_category_file(&mut self, p: &Principal, meta: FileMeta) -> CatalogResult<()> {
        let grid = self.settings_grid(p, &meta.grid_id, Privilege::Manage)?;
        let category_id = meta.category_id.as_deref().unwrap_or_default();
        Self::category(&grid, category_id)?;
        if self.category_files(&grid.id, category_id).count() >= MAX_CATEGORY_FILES {
            return Err(CatalogError::invalid(format!(
                "A category holds at most {MAX_CATEGORY_FILES} files."
            )));
        }
        self.record_files(vec![meta])
    }

    /// The categories `category_ids` names (all when none), each with its files, in the
    /// grid's order of categories.
    pub fn category_listing(
        &self,
        p: &Principal,
        grid_id: &str,
        category_ids: &[String],
    ) -> CatalogResult<Vec<(FileCategory, Vec<FileMeta>)>> {
        let grid = self.settings_grid(p, grid_id, Privilege::Read)?;
        for id in category_ids {
            Self::category(&grid, id)?;
        }
        Ok(grid
            .settings
            .categories
            .iter()
            .filter(|c| category_ids.is_empty() || category_ids.contains(&c.id))
            .map(|c| (c.clone(), self.category_files(grid_id, &c.id).cloned().collect()))
            .collect())
    }

    /// Deletes a file of a category (404 fileIsNotFound for a file not in it).
    pub fn delete_category_file(
        &mut self,
        p: &Principal,
        grid_id: &str,
        category_id: &str,
        file_id: &str,
    ) -> CatalogResult<()> {
        let grid = self.settings_grid(p, grid_id, Privilege::Manage)?;
        Self::category(&grid, category_id)?;
        let held = self.category_files(grid_id, category_id).any(|f| f.id == file_id);
        if !held {
            return Err(CatalogError::not_found(Missing::File, file_id));
        }
        self.commit(&[CatalogChange::delete(EntityKind::File, file_id)])?;
        self.drop_files(&[file_id.to_owned()]);
        Ok(())
    }
}
