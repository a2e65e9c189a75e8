//! The catalogue's entities: companies, projects, databases, grids, branches, keys, tasks,
//! share links, files and webhooks, as the supervisor holds them and the catalogue store
//! persists them.
//!
//! Plain data and the JSON shapes the API answers with; no I/O, no actors.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::auth::Tier;

pub use crate::ids::{CompanyId, ProjectId};
pub use crate::persist::durability::backup_image_key;
pub use crate::persist::recovery::ForkPoint;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Company {
    pub id: CompanyId,
    pub name: String,
    pub tier: Tier,
    pub created_time: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: ProjectId,
    pub company_id: CompanyId,
    pub name: String,
    pub description: String,
    pub created_time: String,
    /// Chosen when the project is made; `DEFAULT` for a project stored before projects had
    /// one.
    #[serde(default, rename = "type")]
    pub project_type: ProjectType,
}

/// A project's type (the OpenAPI's Project `type`): a label gridd keeps and shows, which
/// changes nothing of what the project holds or may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum ProjectType {
    #[default]
    Default,
    Internal,
    Tms,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Database {
    pub id: String,
    pub company_id: CompanyId,
    pub project_id: ProjectId,
    pub name: String,
    /// Free text (`description` of the OpenAPI's Database); empty when none was given.
    #[serde(default)]
    pub description: String,
    pub created_time: String,
}

/// Whether record ids are unique in the grid or per (path, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RecordIdentifierType {
    #[default]
    RecordId,
    PathTagRecordId,
}

/// A grid's status as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GridStatus {
    #[default]
    Active,
    Importing,
    Merging,
    Restoring,
    Branching,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grid {
    pub id: String,
    pub company_id: CompanyId,
    pub project_id: ProjectId,
    pub database_id: String,
    pub name: String,
    pub metadata: IndexMap<String, String>,
    pub record_identifier_type: RecordIdentifierType,
    pub default_access_view_id: String,
    pub created_time: String,
    #[serde(default)]
    pub status: GridStatus,
    /// `/v1/grids/<id>/settings` (defaults until first changed; grids stored before settings
    /// existed load with them).
    #[serde(default)]
    pub settings: GridSettings,
}

/// A grid's settings (the OpenAPI's `GridSetting`). The defaults apply to what is created in
/// the grid afterwards: `default_source_status` to source-language cells an add writes without
/// a `sourceStatus`, `default_date_time_format` to datetime columns created without one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GridSettings {
    /// A `SourceStatus` name; `unset` by default.
    #[serde(default = "unset")]
    pub default_source_language_status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_date_time_format: Option<crate::grid::schema::DateTimeFormat>,
    #[serde(default)]
    pub translator_can_view_automations: bool,
    #[serde(default)]
    pub metadata: IndexMap<String, String>,
    /// File categories, in creation order.
    #[serde(default)]
    pub categories: Vec<FileCategory>,
    /// Who changed the settings first and last, and when last (absent until first changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified_time: Option<String>,
}

fn unset() -> String {
    "unset".to_owned()
}

impl Default for GridSettings {
    fn default() -> Self {
        GridSettings {
            default_source_language_status: unset(),
            default_date_time_format: None,
            translator_can_view_automations: false,
            metadata: IndexMap::new(),
            categories: Vec::new(),
            created_by: None,
            last_modified_by: None,
            last_modified_time: None,
        }
    }
}

/// A named group of files in a grid's settings (the OpenAPI's `FileCategory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCategory {
    pub id: String,
    pub name: String,
}

/// A branch of a grid. The master branch has the grid's own id and no source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    pub id: String,
    pub grid_id: String,
    pub name: String,
    /// Free text (`description` of the OpenAPI's CreateBranch and Branch); empty when none.
    #[serde(default)]
    pub description: String,
    pub source_branch_id: Option<String>,
    pub default_access_view_id: String,
    pub created_time: String,
    #[serde(default)]
    pub status: GridStatus,
    /// Where a branch other than master was copied from its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkPoint>,
}

impl Branch {
    /// The master branch of a new grid: the grid's id, its default view, `created_time`.
    pub fn master_of(grid: &Grid, created_time: String) -> Branch {
        Branch {
            id: grid.id.clone(),
            grid_id: grid.id.clone(),
            name: "master".to_owned(),
            description: String::new(),
            source_branch_id: None,
            default_access_view_id: grid.default_access_view_id.clone(),
            created_time,
            status: GridStatus::Active,
            fork: None,
        }
    }

    pub fn is_master(&self) -> bool {
        self.id == self.grid_id
    }
}

/// A copy of a branch kept before an import, which `restore` puts back. Its records are an
/// image in the snapshot store under `Backup::image_key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backup {
    pub id: String,
    pub company_id: CompanyId,
    pub grid_id: String,
    pub branch_id: String,
    pub created_time: String,
    /// The records it holds.
    pub records: usize,
}

impl Backup {
    /// Where its image is stored.
    pub fn image_key(&self) -> String {
        backup_image_key(&self.id)
    }
}

/// A view's share link: `<public url>/share/<token>` shows the view read-only while active.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Share {
    pub view_id: String,
    pub company_id: CompanyId,
    pub token: String,
    pub active: bool,
    pub include_grid_history: bool,
    pub created_date: String,
    pub last_modified_date: String,
}

/// Whether a webhook delivers: a hook failing for its whole pause period, or whose view is
/// gone, is paused until resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WebhookState {
    Active,
    Paused,
}

/// A view's changes POSTed to a URL (`api::webhooks`): a durable cursor (`position`) over the
/// view's change feed, moved past a commit once its delivery was answered 2xx.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: String,
    pub company_id: CompanyId,
    /// Where the view sits (access checks, and the hooks a grid's or branch's deletion takes).
    pub project_id: ProjectId,
    pub database_id: String,
    pub grid_id: String,
    pub branch_id: String,
    pub view_id: String,
    pub url: String,
    /// The HMAC-SHA256 key of `X-Gridd-Signature`; never shown by the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Only these columns of the view (all of them when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_ids: Option<Vec<String>>,
    /// Only records with a cell in one of these dependency statuses (API names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statuses: Option<Vec<String>>,
    pub created_time: String,
    pub state: WebhookState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_time: Option<String>,
    /// The branch clock value of the last commit delivered (or of the hook's creation).
    pub position: u32,
    /// Since when (Unix milliseconds) every attempt failed; `None` after a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since_ms: Option<i64>,
}

/// One attempt at delivering one part of a webhook's changes, as its delivery log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    pub hook_id: String,
    /// Its place in the hook's log (increasing).
    pub sequence: u64,
    /// `X-Gridd-Delivery`: the same on every attempt of one delivery.
    pub delivery_id: String,
    /// `records` or `schema`.
    pub event: String,
    pub position: u32,
    /// 1 for the first attempt of the delivery.
    pub attempt: u32,
    pub time: String,
    /// The receiver's HTTP status, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why the attempt failed without an answer (or the target was refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl DeliveryAttempt {
    /// Its catalogue id: the hook's id and the sequence, ordered as the sequence.
    pub fn key(&self) -> String {
        format!("{}/{:016x}", self.hook_id, self.sequence)
    }

    /// Whether the receiver answered 2xx.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// An uploaded file: its bytes are `<data dir>/files/<id>`; files cells hold its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileMeta {
    pub id: String,
    pub company_id: CompanyId,
    pub grid_id: String,
    pub original_name: String,
    pub content_type: String,
    pub size: u64,
    pub created_time: String,
    /// The grid settings' file category holding it (`/v1/grids/<id>/settings/categories/...`);
    /// `None` for a file uploaded into a cell. A category's file lives as long as its category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category_id: Option<String>,
}

/// The cell choices (`mergeRecordConflicts`) of the last successful merge from one branch into
/// another, which a later merge between them takes with `useLastMergeResolve: true`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeResolve {
    pub source_branch_id: String,
    pub destination_branch_id: String,
    pub choices: Vec<crate::grid::merge_resolve::CellChoice>,
    pub created_time: String,
}

impl MergeResolve {
    /// Its catalogue id (branch ids are word characters only, so `:` separates them).
    pub fn key(source: &str, destination: &str) -> String {
        format!("{destination}:{source}")
    }
}

/// A task's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskStatus {
    Running,
    Successful,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskError {
    pub code: String,
    pub message: String,
}

/// A long-running operation (merge, import, history export, restore), as persisted in the
/// catalogue; the API shows it through `api::tasks::TaskBody`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub company_id: CompanyId,
    /// The view the task works on, when it works on one (a history export is served only
    /// through its view).
    #[serde(default)]
    pub view_id: Option<String>,
    /// Where the task's grid sits: a task is seen only by keys that reach its grid (and, for a
    /// view key, its view). Tasks recorded before these were kept have none.
    #[serde(default)]
    pub project_id: Option<ProjectId>,
    #[serde(default)]
    pub database_id: Option<String>,
    #[serde(default)]
    pub grid_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    pub status: TaskStatus,
    pub progress: u8,
    pub created_time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
    /// The id of the branch the task makes (a point-in-time restore); the branch exists once
    /// the task is successful.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creates_branch: Option<String>,
    /// In a cluster, the node running the task: another node fails it once that node has left
    /// the cluster while it ran (`Supervisor::fail_orphaned_tasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// Current time as the API writes timestamps: ISO 8601, milliseconds, UTC offset.
pub fn now_timestamp() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3f+00:00").to_string()
}
