//! The `Supervisor` actor: owns the catalogue in memory, persists every change through the
//! `CatalogStore` before acknowledging it, starts and stops grid actors, and keeps the route
//! table and key ring that handlers read.
//!
//! Handlers send it `Exec` messages: a closure run on the supervisor's own thread with
//! exclusive access, so every catalogue change is serialized here.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use actix::{Actor, ArbiterHandle, Context, Handler, Message, MessageResult};
use indexmap::IndexMap;

use super::model::{
    now_timestamp, Backup, Branch, Company, Database, FileMeta, Grid, Project, Share, Task,
    TaskError, TaskStatus,
};
use super::routes::Routes;
use super::store::{load_all, CatalogChange, CatalogStore, EntityKind, StoreError};
use crate::auth::{ApiKey, KeyRing};
use crate::error::{ApiError, ApiResult};
use crate::persist::durability::Durability;

/// The catalogue and everything the supervisor needs to change it.
pub struct Supervisor {
    pub(super) companies: IndexMap<String, Company>,
    pub(super) projects: IndexMap<String, Project>,
    pub(super) databases: IndexMap<String, Database>,
    pub(super) grids: IndexMap<String, Grid>,
    pub(super) branches: IndexMap<String, Branch>,
    pub(super) keys: IndexMap<String, ApiKey>,
    pub(super) tasks: IndexMap<String, Task>,
    pub(super) backups: IndexMap<String, Backup>,
    /// Share links by view id.
    pub(super) shares: IndexMap<String, Share>,
    /// The active share links' view ids by the SHA-256 of their token.
    pub(super) share_tokens: HashMap<[u8; 32], String>,
    /// Uploaded files by id.
    pub(super) files: IndexMap<String, FileMeta>,
    pub(super) store: Box<dyn CatalogStore>,
    pub(super) keyring: Arc<KeyRing>,
    pub(super) routes: Arc<Routes>,
    pub(super) durability: Arc<Durability>,
    /// Where uploaded files' bytes are (`files::files_dir`).
    pub(super) files_dir: PathBuf,
    arbiters: Vec<ArbiterHandle>,
    next_arbiter: usize,
}

impl Supervisor {
    /// Loads the catalogue from the store. Grid actors are started by `start_branches`.
    pub fn load(
        store: Box<dyn CatalogStore>,
        keyring: Arc<KeyRing>,
        routes: Arc<Routes>,
        arbiters: Vec<ArbiterHandle>,
        durability: Arc<Durability>,
        files_dir: PathBuf,
    ) -> Result<Supervisor, StoreError> {
        let companies: Vec<Company> = load_all(store.as_ref(), EntityKind::Company)?;
        let projects: Vec<Project> = load_all(store.as_ref(), EntityKind::Project)?;
        let databases: Vec<Database> = load_all(store.as_ref(), EntityKind::Database)?;
        let grids: Vec<Grid> = load_all(store.as_ref(), EntityKind::Grid)?;
        let branches: Vec<Branch> = load_all(store.as_ref(), EntityKind::Branch)?;
        let keys: Vec<ApiKey> = load_all(store.as_ref(), EntityKind::Key)?;
        let tasks: Vec<Task> = load_all(store.as_ref(), EntityKind::Task)?;
        let backups: Vec<Backup> = load_all(store.as_ref(), EntityKind::Backup)?;
        let shares: Vec<Share> = load_all(store.as_ref(), EntityKind::Share)?;
        let files: Vec<FileMeta> = load_all(store.as_ref(), EntityKind::File)?;
        for company in &companies {
            keyring.set_tier(&company.id, company.tier);
        }
        for key in &keys {
            keyring.insert(key.clone());
        }
        let mut supervisor = Supervisor {
            companies: companies.into_iter().map(|c| (c.id.clone(), c)).collect(),
            projects: projects.into_iter().map(|p| (p.id.clone(), p)).collect(),
            databases: databases.into_iter().map(|d| (d.id.clone(), d)).collect(),
            grids: grids.into_iter().map(|g| (g.id.clone(), g)).collect(),
            branches: branches.into_iter().map(|b| (b.id.clone(), b)).collect(),
            keys: keys.into_iter().map(|k| (k.id.clone(), k)).collect(),
            tasks: tasks.into_iter().map(|t| (t.id.clone(), t)).collect(),
            backups: backups.into_iter().map(|b| (b.id.clone(), b)).collect(),
            shares: shares.into_iter().map(|s| (s.view_id.clone(), s)).collect(),
            share_tokens: HashMap::new(),
            files: files.into_iter().map(|f| (f.id.clone(), f)).collect(),
            store,
            keyring,
            routes,
            durability,
            files_dir,
            arbiters,
            next_arbiter: 0,
        };
        supervisor.sort_by_creation();
        supervisor.index_share_tokens();
        supervisor.fail_interrupted_tasks()?;
        // A status such as `merging` belongs to a task the restart cut off.
        supervisor.grids.values_mut().for_each(|g| g.status = Default::default());
        supervisor.branches.values_mut().for_each(|b| b.status = Default::default());
        Ok(supervisor)
    }

    /// Tasks still running when the server stopped were cut off: they read failed.
    fn fail_interrupted_tasks(&mut self) -> Result<(), StoreError> {
        let mut changes = Vec::new();
        for task in self.tasks.values_mut().filter(|t| t.status == TaskStatus::Running) {
            task.status = TaskStatus::Failed;
            task.finished_time = Some(now_timestamp());
            task.error = Some(TaskError {
                code: "interrupted".to_owned(),
                message: "The server stopped while the task was running.".to_owned(),
            });
            changes.push(CatalogChange::put(EntityKind::Task, &task.id, &*task));
        }
        if changes.is_empty() {
            return Ok(());
        }
        self.store.apply(&changes)
    }

    /// sled scans in key order; the API lists in creation order.
    fn sort_by_creation(&mut self) {
        self.projects.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.databases.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.grids.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.branches.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.keys.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.tasks.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
        self.backups.sort_by(|_, a, _, b| a.created_time.cmp(&b.created_time));
    }

    /// Persists a change set; memory is changed by the caller only after this succeeds.
    pub(super) fn commit(&self, changes: &[CatalogChange]) -> ApiResult<()> {
        self.store.apply(changes).map_err(|err| {
            tracing::error!(error = %err, "catalogue write failed");
            ApiError::internal("The catalogue could not be written.")
        })
    }

    /// The arbiter the next grid actor runs on (round robin, one per core).
    pub(super) fn next_arbiter(&mut self) -> ArbiterHandle {
        let handle = self.arbiters[self.next_arbiter % self.arbiters.len()].clone();
        self.next_arbiter += 1;
        handle
    }

    pub fn keyring(&self) -> &Arc<KeyRing> {
        &self.keyring
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

/// A closure run on the supervisor with exclusive access to the catalogue.
pub struct Exec<R>(Box<dyn FnOnce(&mut Supervisor) -> R + Send>);

impl<R> Exec<R> {
    pub fn new(f: impl FnOnce(&mut Supervisor) -> R + Send + 'static) -> Exec<R> {
        Exec(Box::new(f))
    }
}

impl<R: Send + 'static> Message for Exec<R> {
    type Result = R;
}

impl<R: Send + 'static> Handler<Exec<R>> for Supervisor {
    type Result = MessageResult<Exec<R>>;

    fn handle(&mut self, msg: Exec<R>, _: &mut Context<Self>) -> Self::Result {
        MessageResult((msg.0)(self))
    }
}
