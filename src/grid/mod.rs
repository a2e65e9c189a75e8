//! Grid branches: the `GridActor` and everything it owns (schema, views, dependencies,
//! records), with the pure functions that validate and apply changes to them.

pub mod actor;
pub mod columns;
pub mod ops;
pub mod planner;
pub mod render;
pub mod schema;
pub mod value;

pub use actor::GridActor;
