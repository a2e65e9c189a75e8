//! API keys as stored (hashed), their privileges, accesses and the company plan tiers.
//!
//! Owns the `KeyRing`: hash -> key and company -> tier, shared by every HTTP worker and written
//! only by the supervisor.

use std::sync::Arc;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ids::{CompanyId, ProjectId};

/// What a company key may do; each privilege includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Privilege {
    Read,
    Write,
    Manage,
    Owner,
}

impl Privilege {
    pub fn parse(s: &str) -> Option<Privilege> {
        match s {
            "read" => Some(Privilege::Read),
            "write" => Some(Privilege::Write),
            "manage" => Some(Privilege::Manage),
            "owner" => Some(Privilege::Owner),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Privilege::Read => "read",
            Privilege::Write => "write",
            Privilege::Manage => "manage",
            Privilege::Owner => "owner",
        }
    }
}

/// A company's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Tier {
    Free,
    Team,
    Enterprise,
}

impl Tier {
    pub fn parse(s: &str) -> Option<Tier> {
        match s {
            "free" => Some(Tier::Free),
            "team" => Some(Tier::Team),
            "enterprise" => Some(Tier::Enterprise),
            _ => None,
        }
    }

    /// The plan's name as the accessDenied message says it.
    pub fn plan_name(self) -> &'static str {
        match self {
            Tier::Free => "Free",
            Tier::Team => "Team",
            Tier::Enterprise => "Enterprise",
        }
    }
}

/// Which resources a company key reaches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    #[serde(default)]
    pub all: bool,
    #[serde(default)]
    pub projects: Vec<ProjectId>,
    #[serde(default)]
    pub databases: Vec<String>,
    #[serde(default)]
    pub grids: Vec<String>,
}

impl Access {
    pub fn everything() -> Access {
        Access { all: true, projects: Vec::new(), databases: Vec::new(), grids: Vec::new() }
    }

    /// Whether a resource under the given project / database / grid is reachable.
    pub fn reaches(&self, project: ProjectId, database: Option<&str>, grid: Option<&str>) -> bool {
        self.all
            || self.projects.contains(&project)
            || database.is_some_and(|d| self.databases.iter().any(|x| x == d))
            || grid.is_some_and(|g| self.grids.iter().any(|x| x == g))
    }
}

/// A company key (privileges and accesses) or a view key (one view).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum KeyKind {
    Company { privileges: Vec<Privilege>, access: Access },
    View { view_id: String },
}

/// A key as the catalogue stores it: never the secret, only its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: String,
    pub company_id: CompanyId,
    pub name: String,
    pub user: String,
    pub kind: KeyKind,
    /// Hex of SHA-256 of the secret.
    pub hash: String,
    pub created_time: String,
    /// The server's admin key (the bootstrap owner key): may manage companies.
    #[serde(default)]
    pub admin: bool,
    /// A view key's grid, recorded when the key was made: where the key's reach is found by a
    /// node of a cluster that does not serve the view (only the default views are in the
    /// catalogue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view_grid: Option<String>,
}

impl ApiKey {
    /// The highest privilege this key holds (view keys: write on their view).
    pub fn privilege(&self) -> Privilege {
        match &self.kind {
            KeyKind::Company { privileges, .. } => {
                privileges.iter().copied().max().unwrap_or(Privilege::Read)
            }
            KeyKind::View { .. } => Privilege::Write,
        }
    }
}

/// SHA-256 of a key secret.
pub fn hash_secret(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Keys and company tiers as handlers read them. Written only by the supervisor.
#[derive(Debug, Default)]
pub struct KeyRing {
    keys: DashMap<[u8; 32], Arc<ApiKey>>,
    tiers: DashMap<CompanyId, Tier>,
}

impl KeyRing {
    /// The key whose secret this is, if any. The stored hash is compared in constant time.
    pub fn find(&self, secret: &str) -> Option<Arc<ApiKey>> {
        let digest = hash_secret(secret);
        let entry = self.keys.get(&digest)?;
        // The map's key is the stored hash, decoded once when the key was inserted.
        bool::from(entry.key().ct_eq(&digest)).then(|| entry.value().clone())
    }

    pub fn insert(&self, key: ApiKey) {
        if let Ok(bytes) = hex::decode(&key.hash) {
            if let Ok(digest) = <[u8; 32]>::try_from(bytes.as_slice()) {
                self.keys.insert(digest, Arc::new(key));
            }
        }
    }

    pub fn remove(&self, hash_hex: &str) {
        if let Ok(bytes) = hex::decode(hash_hex) {
            if let Ok(digest) = <[u8; 32]>::try_from(bytes.as_slice()) {
                self.keys.remove(&digest);
            }
        }
    }

    /// Removes every key of a company and its tier.
    pub fn remove_company(&self, company_id: CompanyId) {
        self.keys.retain(|_, k| k.company_id != company_id);
        self.tiers.remove(&company_id);
    }

    pub fn set_tier(&self, company_id: CompanyId, tier: Tier) {
        self.tiers.insert(company_id, tier);
    }

    pub fn tier(&self, company_id: CompanyId) -> Tier {
        self.tiers.get(&company_id).map(|t| *t).unwrap_or(Tier::Free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(secret: &str) -> ApiKey {
        ApiKey {
            view_grid: None,
            id: "k1".into(),
            company_id: 1,
            name: "ci".into(),
            user: "ci-bot".into(),
            kind: KeyKind::Company {
                privileges: vec![Privilege::Read, Privilege::Write],
                access: Access::everything(),
            },
            hash: hex::encode(hash_secret(secret)),
            created_time: String::new(),
            admin: false,
        }
    }

    #[test]
    fn finds_by_secret_and_forgets_on_removal() {
        let ring = KeyRing::default();
        let k = key("s3cret");
        ring.insert(k.clone());
        assert_eq!(ring.find("s3cret").map(|k| k.id.clone()), Some("k1".to_owned()));
        assert!(ring.find("other").is_none());
        ring.remove(&k.hash);
        assert!(ring.find("s3cret").is_none());
    }

    #[test]
    fn privileges_include_lower_ones() {
        assert!(Privilege::Owner > Privilege::Manage);
        assert_eq!(key("x").privilege(), Privilege::Write);
    }

    #[test]
    fn scoped_access() {
        let access = Access {
            all: false,
            projects: vec![],
            databases: vec!["d1".into()],
            grids: vec!["g9".into()],
        };
        assert!(access.reaches(1, Some("d1"), None));
        assert!(access.reaches(1, Some("d2"), Some("g9")));
        assert!(!access.reaches(1, Some("d2"), Some("g1")));
        assert!(!access.reaches(1, None, None));
    }
}
