//! The catalogue: companies, projects, databases, grids, branches, keys, tasks, webhooks and CDNs,
//! owned by the `Supervisor` actor, which also starts and stops grid actors and keeps the route
//! table.
//! What it refuses is a `CatalogError`.

pub mod backups;
pub mod branches;
pub mod cdns;
pub mod cluster_grids;
pub mod collector;
pub mod error;
pub mod files;
pub mod glossaries;
pub mod grids;
pub mod journal;
pub mod keys;
pub mod model;
pub mod numbering;
pub mod routes;
pub mod settings;
pub mod shares;
pub mod store;
pub mod supervisor;
pub mod tenancy;
pub mod transmems;
pub mod webhooks;

pub use error::{CatalogError, CatalogResult, Missing};
pub use routes::{BranchRoute, Routes};
pub use supervisor::{Exec, Supervisor};
