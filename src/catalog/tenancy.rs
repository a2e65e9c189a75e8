//! Supervisor operations on the tenancy tree above grids: bootstrap, companies, projects,
//! databases, API keys, task lookup, and the names reference columns show.

use super::error::{CatalogError, CatalogResult, Missing};
use super::model::{
    now_timestamp, Company, CompanyId, Database, Project, ProjectId, ProjectType, Task, TaskError,
    TaskStatus,
};
use super::routes::BranchRoute;
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{hash_secret, Access, ApiKey, KeyKind, Principal, Privilege, Scope, Tier};
use crate::ids;

/// A newly made company with its first project, database and owner key (secret included).
#[derive(Debug, Clone)]
pub struct NewCompany {
    pub company: Company,
    pub project_id: ProjectId,
    pub database_id: String,
    pub owner_key: String,
}

/// A key to create, as the admin API receives it.
#[derive(Debug, Clone)]
pub struct KeySpec {
    pub name: String,
    pub user: Option<String>,
    pub kind: KeyKind,
    /// A view key's grid when another node of the cluster serves the view (`ApiKey::view_grid`).
    pub view_grid: Option<String>,
}

const MAX_NAME_CHARS: usize = 255;
/// The longest description of a database or a branch.
pub const MAX_DESCRIPTION_CHARS: usize = 10_000;
/// The longest id a client may choose for a database or a grid.
pub const MAX_CLIENT_ID_CHARS: usize = 64;

/// A database to create: its name, description and the id the client chose, if any.
#[derive(Debug, Clone, Default)]
pub struct NewDatabase {
    pub name: String,
    pub description: Option<String>,
    pub id: Option<String>,
}

/// A description as given (400 naming the field when it is too long).
pub(crate) fn check_description(text: &str) -> CatalogResult<String> {
    if text.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(CatalogError::invalid(format!(
            "description is longer than {MAX_DESCRIPTION_CHARS} characters."
        )));
    }
    Ok(text.to_owned())
}

/// An id chosen by the client (the OpenAPI's `^\w+$`: ASCII letters, digits and `_`, at most
/// `MAX_CLIENT_ID_CHARS`); 400 naming the field otherwise. `taken` says whether it is in use
/// (409 idAlreadyExists).
pub(crate) fn check_client_id(id: &str, what: &'static str, taken: bool) -> CatalogResult<String> {
    let valid = !id.is_empty()
        && id.len() <= MAX_CLIENT_ID_CHARS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(CatalogError::invalid(format!(
            "id \"{id}\" is invalid: a {what} id is 1 to {MAX_CLIENT_ID_CHARS} letters, digits or _."
        )));
    }
    if taken {
        return Err(CatalogError::IdTaken { what, id: id.to_owned() });
    }
    Ok(id.to_owned())
}

/// A name as given, trimmed (400 when empty or too long).
pub(super) fn check_name(name: &str, what: &str) -> CatalogResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CatalogError::invalid(format!("The {what} name is required.")));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(CatalogError::invalid(format!(
            "The {what} name is longer than {MAX_NAME_CHARS} characters."
        )));
    }
    Ok(name.to_owned())
}

impl Supervisor {
    /// On an empty catalogue: the default company, project, database and the owner key
    /// (`secret`, or a random one, returned so the caller can print it once). On a catalogue that
    /// exists, a given `secret` that matches no key is added as an admin owner key of the default
    /// company (`default_company_id`), so an operator can always regain access.
    pub fn bootstrap(&mut self, secret: Option<&str>) -> CatalogResult<Option<String>> {
        if self.companies.is_empty() {
            let made =
                self.create_company_unchecked("Default company", Tier::Enterprise, secret, true)?;
            tracing::info!(company = %made.company.id, "bootstrapped an empty data directory");
            return Ok(Some(made.owner_key));
        }
        let Some(secret) = secret else {
            return Ok(None);
        };
        if self.keyring.find(secret).is_some() {
            return Ok(None);
        }
        let company_id = self.default_company_id().expect("catalogue is not empty");
        let key = owner_key(company_id, secret, true);
        self.commit(&[CatalogChange::put(EntityKind::Key, &key.id, &key)])?;
        self.keyring.insert(key.clone());
        self.keys.insert(key.id.clone(), key);
        tracing::info!("added the configured API key as an admin key");
        Ok(None)
    }

    /// The default company: the one the bootstrap made, which holds the admin keys; without an
    /// admin key, the oldest company (the catalogue loads companies in id order, not in the
    /// order they were made).
    pub(super) fn default_company_id(&self) -> Option<CompanyId> {
        let admin_company = self
            .keys
            .values()
            .filter(|k| k.admin && self.companies.contains_key(&k.company_id))
            .min_by(|a, b| a.created_time.cmp(&b.created_time))
            .map(|k| k.company_id);
        admin_company.or_else(|| {
            self.companies
                .values()
                .min_by(|a, b| (&a.created_time, &a.id).cmp(&(&b.created_time, &b.id)))
                .map(|c| c.id)
        })
    }

    fn create_company_unchecked(
        &mut self,
        name: &str,
        tier: Tier,
        secret: Option<&str>,
        admin: bool,
    ) -> CatalogResult<NewCompany> {
        let now = now_timestamp();
        let mut numbers = self.numbers;
        let company = Company {
            id: numbers.next_company(),
            name: check_name(name, "company")?,
            tier,
            created_time: now.clone(),
        };
        let project = Project {
            id: numbers.next_project(),
            company_id: company.id,
            name: "Default project".to_owned(),
            description: String::new(),
            created_time: now.clone(),
            project_type: ProjectType::Default,
        };
        let database = Database {
            id: ids::generate(),
            company_id: company.id,
            project_id: project.id,
            name: "Default database".to_owned(),
            description: String::new(),
            created_time: now,
        };
        let secret = secret.map(str::to_owned).unwrap_or_else(ids::generate_secret);
        let key = owner_key(company.id, &secret, admin);
        self.commit(&[
            numbers.change(),
            CatalogChange::put(EntityKind::Company, &company.id.to_string(), &company),
            CatalogChange::put(EntityKind::Project, &project.id.to_string(), &project),
            CatalogChange::put(EntityKind::Database, &database.id, &database),
            CatalogChange::put(EntityKind::Key, &key.id, &key),
        ])?;
        self.numbers = numbers;
        self.keyring.set_tier(company.id, tier);
        self.keyring.insert(key.clone());
        self.keys.insert(key.id.clone(), key);
        let made = NewCompany {
            company: company.clone(),
            project_id: project.id,
            database_id: database.id.clone(),
            owner_key: secret,
        };
        self.companies.insert(company.id, company);
        self.projects.insert(project.id, project);
        self.databases.insert(database.id.clone(), database);
        Ok(made)
    }

    // ---- companies (server admin only) ----

    pub fn create_company(
        &mut self,
        p: &Principal,
        name: &str,
        tier: Tier,
    ) -> CatalogResult<NewCompany> {
        p.require_admin()?;
        self.create_company_unchecked(name, tier, None, false)
    }

    pub fn set_company_tier(
        &mut self,
        p: &Principal,
        id: CompanyId,
        tier: Tier,
    ) -> CatalogResult<Company> {
        p.require_admin()?;
        let mut company = (self.companies.get(&id).cloned())
            .ok_or_else(|| CatalogError::not_found(Missing::Company, id))?;
        company.tier = tier;
        self.commit(&[CatalogChange::put(EntityKind::Company, &id.to_string(), &company)])?;
        self.keyring.set_tier(id, tier);
        self.companies.insert(id, company.clone());
        Ok(company)
    }

    pub fn delete_company(&mut self, p: &Principal, id: CompanyId) -> CatalogResult<()> {
        p.require_admin()?;
        if !self.companies.contains_key(&id) {
            return Err(CatalogError::not_found(Missing::Company, id));
        }
        if p.company_id() == id {
            return Err(CatalogError::invalid("The admin key's own company cannot be deleted."));
        }
        let project_ids: Vec<ProjectId> =
            self.projects.values().filter(|x| x.company_id == id).map(|x| x.id).collect();
        let mut changes = vec![CatalogChange::delete(EntityKind::Company, &id.to_string())];
        for &project in &project_ids {
            changes.extend(self.project_deletion(project));
        }
        let key_ids: Vec<String> =
            self.keys.values().filter(|k| k.company_id == id).map(|k| k.id.clone()).collect();
        changes.extend(key_ids.iter().map(|k| CatalogChange::delete(EntityKind::Key, k)));
        let task_ids: Vec<String> =
            self.tasks.values().filter(|t| t.company_id == id).map(|t| t.id.clone()).collect();
        changes.extend(task_ids.iter().map(|t| CatalogChange::delete(EntityKind::Task, t)));
        changes.extend(self.company_glossaries_deletion(id));
        self.commit(&changes)?;
        self.forget_company(id);
        Ok(())
    }

    /// Forgets a company and everything it owns (its deletion is durable).
    pub(super) fn forget_company(&mut self, id: CompanyId) {
        self.forget_company_glossaries(id);
        let project_ids: Vec<ProjectId> =
            self.projects.values().filter(|x| x.company_id == id).map(|x| x.id).collect();
        for project in project_ids {
            self.forget_project(project);
        }
        self.keys.retain(|_, k| k.company_id != id);
        self.tasks.retain(|_, t| t.company_id != id);
        self.keyring.remove_company(id);
        self.companies.shift_remove(&id);
    }

    // ---- projects ----

    fn project_scope<'a>(project: &'a Project) -> Scope<'a> {
        Scope { company: project.company_id, project: Some(project.id), ..Scope::default() }
    }

    pub fn list_projects(&self, p: &Principal) -> CatalogResult<Vec<Project>> {
        p.require_company_privilege(Privilege::Read)?;
        Ok(self.projects.values().filter(|x| p.sees(&Self::project_scope(x))).cloned().collect())
    }

    /// A project this key may act on with `needed`: another company's is not found (404); a key
    /// of this company without the privilege or access, or a view key, is refused (403).
    pub fn project(
        &self,
        p: &Principal,
        id: ProjectId,
        needed: Privilege,
    ) -> CatalogResult<&Project> {
        let not_found = || CatalogError::not_found(Missing::Project, id);
        let project = self.projects.get(&id).ok_or_else(not_found)?;
        p.authorize(&Self::project_scope(project), needed, not_found)?;
        Ok(project)
    }

    pub fn create_project(
        &mut self,
        p: &Principal,
        name: &str,
        description: Option<String>,
        project_type: ProjectType,
    ) -> CatalogResult<Project> {
        p.require_company_privilege(Privilege::Owner)?;
        let name = check_name(name, "project")?;
        let description = description.as_deref().map(check_description).transpose()?;
        let mut numbers = self.numbers;
        let project = Project {
            id: numbers.next_project(),
            company_id: p.company_id(),
            name,
            description: description.unwrap_or_default(),
            created_time: now_timestamp(),
            project_type,
        };
        self.commit(&[
            numbers.change(),
            CatalogChange::put(EntityKind::Project, &project.id.to_string(), &project),
        ])?;
        self.numbers = numbers;
        self.projects.insert(project.id, project.clone());
        Ok(project)
    }

    pub fn rename_project(
        &mut self,
        p: &Principal,
        id: ProjectId,
        name: &str,
        description: Option<String>,
    ) -> CatalogResult<Project> {
        let mut project = self.project(p, id, Privilege::Owner)?.clone();
        project.name = check_name(name, "project")?;
        if let Some(description) = description {
            project.description = check_description(&description)?;
        }
        self.commit(&[CatalogChange::put(EntityKind::Project, &id.to_string(), &project)])?;
        self.projects.insert(id, project.clone());
        Ok(project)
    }

    pub fn delete_project(&mut self, p: &Principal, id: ProjectId) -> CatalogResult<()> {
        self.project(p, id, Privilege::Owner)?;
        let mut changes = self.project_deletion(id);
        let unlinked = self.glossaries_unlinked(id);
        changes.extend(unlinked.iter().map(|g| g.change()));
        self.commit(&changes)?;
        self.forget_project(id);
        self.republish_glossaries(unlinked);
        Ok(())
    }

    fn project_deletion(&self, id: ProjectId) -> Vec<CatalogChange> {
        let mut changes = vec![CatalogChange::delete(EntityKind::Project, &id.to_string())];
        for db in self.databases.values().filter(|d| d.project_id == id) {
            changes.extend(self.database_deletion(&db.id));
        }
        changes
    }

    pub(super) fn forget_project(&mut self, id: ProjectId) {
        let dbs: Vec<String> =
            self.databases.values().filter(|d| d.project_id == id).map(|d| d.id.clone()).collect();
        for db in dbs {
            self.forget_database(&db);
        }
        self.projects.shift_remove(&id);
    }

    // ---- databases ----

    fn database_scope<'a>(db: &'a Database) -> Scope<'a> {
        Scope {
            company: db.company_id,
            project: Some(db.project_id),
            database: Some(&db.id),
            ..Scope::default()
        }
    }

    pub fn list_databases(
        &self,
        p: &Principal,
        project_id: Option<ProjectId>,
    ) -> CatalogResult<Vec<Database>> {
        if let Some(project_id) = project_id {
            self.project(p, project_id, Privilege::Read)?;
        }
        p.require_company_privilege(Privilege::Read)?;
        Ok(self
            .databases
            .values()
            .filter(|d| project_id.is_none_or(|pid| d.project_id == pid))
            .filter(|d| p.sees(&Self::database_scope(d)))
            .cloned()
            .collect())
    }

    /// A database this key may act on with `needed` (404 for another company's, 403 for a key of
    /// this company that may not).
    pub fn database(&self, p: &Principal, id: &str, needed: Privilege) -> CatalogResult<&Database> {
        let not_found = || CatalogError::not_found(Missing::Database, id);
        let db = self.databases.get(id).ok_or_else(not_found)?;
        p.authorize(&Self::database_scope(db), needed, not_found)?;
        Ok(db)
    }

    pub fn create_database(
        &mut self,
        p: &Principal,
        project_id: ProjectId,
        spec: NewDatabase,
    ) -> CatalogResult<Database> {
        let db = self.new_database(p, project_id, spec)?;
        self.commit(&[CatalogChange::put(EntityKind::Database, &db.id, &db)])?;
        self.databases.insert(db.id.clone(), db.clone());
        Ok(db)
    }

    /// A database `spec` describes in project `project_id`, checked but not recorded.
    pub(super) fn new_database(
        &self,
        p: &Principal,
        project_id: ProjectId,
        spec: NewDatabase,
    ) -> CatalogResult<Database> {
        let project = self.project(p, project_id, Privilege::Owner)?;
        let name = check_name(&spec.name, "database")?;
        let description = check_description(spec.description.as_deref().unwrap_or_default())?;
        let id = match spec.id {
            Some(id) => check_client_id(&id, "database", self.databases.contains_key(&id))?,
            None => ids::generate(),
        };
        Ok(Database {
            id,
            company_id: project.company_id,
            project_id: project.id,
            name,
            description,
            created_time: now_timestamp(),
        })
    }

    /// Renames a database and, when `description` is given, replaces its description.
    pub fn update_database(
        &mut self,
        p: &Principal,
        id: &str,
        name: &str,
        description: Option<&str>,
    ) -> CatalogResult<Database> {
        let mut db = self.database(p, id, Privilege::Owner)?.clone();
        db.name = check_name(name, "database")?;
        if let Some(description) = description {
            db.description = check_description(description)?;
        }
        self.commit(&[CatalogChange::put(EntityKind::Database, id, &db)])?;
        self.databases.insert(id.to_owned(), db.clone());
        Ok(db)
    }

    pub fn delete_database(&mut self, p: &Principal, id: &str) -> CatalogResult<()> {
        self.database(p, id, Privilege::Owner)?;
        let changes = self.database_deletion(id);
        self.commit(&changes)?;
        self.forget_database(id);
        Ok(())
    }

    fn database_deletion(&self, id: &str) -> Vec<CatalogChange> {
        let mut changes = vec![CatalogChange::delete(EntityKind::Database, id)];
        for grid in self.grids.values().filter(|g| g.database_id == id) {
            changes.extend(self.grid_deletion(&grid.id));
        }
        changes
    }

    pub(super) fn forget_database(&mut self, id: &str) {
        let grids: Vec<String> =
            self.grids.values().filter(|g| g.database_id == id).map(|g| g.id.clone()).collect();
        for grid in grids {
            self.forget_grid(&grid);
        }
        self.databases.shift_remove(id);
    }

    // ---- names ----

    /// The names of a grid and one of its branches when they belong to the caller's company,
    /// for reference columns that point at them (`None` hides another company's grid).
    pub fn reference_names(
        &self,
        p: &Principal,
        grid_id: &str,
        branch_id: &str,
    ) -> Option<(String, String)> {
        let grid = self.grids.get(grid_id).filter(|g| g.company_id == p.company_id())?;
        let branch = self.branches.get(branch_id).filter(|b| b.grid_id == grid.id)?;
        Some((grid.name.clone(), branch.name.clone()))
    }

    // ---- tasks ----

    /// A task the key may see: of its company, on a grid its access reaches, and for a view key
    /// on its view; any other is 404 taskIsNotFound (a task's existence does not leak).
    /// How many tasks of `kind` the principal's company has running.
    pub fn running_tasks(&self, p: &Principal, kind: &str) -> usize {
        let company = p.company_id();
        self.tasks
            .values()
            .filter(|t| t.company_id == company && t.kind == kind)
            .filter(|t| t.status == TaskStatus::Running)
            .count()
    }

    /// Whether `id` is a branch's default view (the catalogue knows no other views: they live
    /// in the branch's schema), for request forwarding.
    pub fn is_default_view(&self, id: &str) -> bool {
        self.branches.values().any(|b| b.default_access_view_id == id)
    }

    /// The grid task `id` works on, when it is known and has one (for request forwarding).
    pub fn task_grid(&self, id: &str) -> Option<String> {
        self.tasks.get(id).and_then(|t| t.grid_id.clone())
    }

    pub fn task(&self, p: &Principal, id: &str) -> CatalogResult<Task> {
        self.tasks
            .get(id)
            .filter(|t| {
                let scope = Scope {
                    company: t.company_id,
                    project: t.project_id,
                    database: t.database_id.as_deref(),
                    grid: t.grid_id.as_deref(),
                    view: t.view_id.as_deref(),
                };
                match (&p.key.kind, &t.grid_id) {
                    // Tasks recorded without their grid: keys of the whole company only.
                    (KeyKind::Company { access, .. }, None) => {
                        access.all && t.company_id == p.company_id()
                    }
                    (KeyKind::View { .. }, None) => false,
                    (_, Some(_)) => p.sees(&scope),
                }
            })
            .cloned()
            .ok_or_else(|| CatalogError::not_found(Missing::Task, id))
    }

    /// Records a new running task of `kind` on the branch at `route` (through `view_id` when
    /// it works through a view), for the principal's company.
    pub fn start_task(
        &mut self,
        p: &Principal,
        kind: &str,
        route: &BranchRoute,
        view_id: Option<String>,
        creates_branch: Option<String>,
    ) -> CatalogResult<Task> {
        let task = Task {
            id: ids::generate(),
            company_id: p.company_id(),
            view_id,
            project_id: Some(route.project_id),
            database_id: Some(route.database_id.clone()),
            grid_id: Some(route.grid_id.clone()),
            kind: kind.to_owned(),
            status: TaskStatus::Running,
            progress: 0,
            created_time: now_timestamp(),
            finished_time: None,
            error: None,
            creates_branch,
            node: self.cluster.as_ref().map(|c| c.id().to_owned()),
        };
        self.commit(&[CatalogChange::put(EntityKind::Task, &task.id, &task)])?;
        self.tasks.insert(task.id.clone(), task.clone());
        Ok(task)
    }

    /// Ends a running task: successful, or failed with `error`.
    /// Shows how far a running task has come (0-99; its end shows 100). Kept in memory only:
    /// a restart fails the tasks it cut off, whatever their progress.
    pub fn set_task_progress(&mut self, id: &str, progress: u8) {
        if let Some(task) = self.tasks.get_mut(id).filter(|t| t.status == TaskStatus::Running) {
            task.progress = progress.min(99);
        }
    }

    pub fn finish_task(&mut self, id: &str, error: Option<TaskError>) -> CatalogResult<()> {
        let Some(current) = self.tasks.get(id) else { return Ok(()) };
        let mut task = current.clone();
        task.status = if error.is_some() { TaskStatus::Failed } else { TaskStatus::Successful };
        task.progress = 100;
        task.finished_time = Some(now_timestamp());
        task.error = error;
        self.commit(&[CatalogChange::put(EntityKind::Task, id, &task)])?;
        self.tasks.insert(id.to_owned(), task);
        Ok(())
    }
}

fn owner_key(company_id: CompanyId, secret: &str, admin: bool) -> ApiKey {
    ApiKey {
        view_grid: None,
        id: ids::generate(),
        company_id,
        name: "owner".to_owned(),
        user: "owner".to_owned(),
        kind: KeyKind::Company { privileges: vec![Privilege::Owner], access: Access::everything() },
        hash: hex::encode(hash_secret(secret)),
        created_time: now_timestamp(),
        admin,
    }
}

impl Supervisor {
    /// An owner principal for `company` (default: the admin key's company), for the CLI, which
    /// acts with the operator's authority on a data directory.
    pub fn owner_principal(&self, company: Option<CompanyId>) -> CatalogResult<Principal> {
        let admin = self
            .keys
            .values()
            .find(|k| k.admin)
            .cloned()
            .ok_or(CatalogError::Internal("the data directory has no admin key"))?;
        let company_id = company.unwrap_or(admin.company_id);
        let tier = (self.companies.get(&company_id).map(|c| c.tier))
            .ok_or_else(|| CatalogError::not_found(Missing::Company, company_id))?;
        let admin_flag = company_id == admin.company_id;
        let key = ApiKey { company_id, admin: admin_flag, ..admin };
        Ok(Principal { key: std::sync::Arc::new(key), tier })
    }
}
