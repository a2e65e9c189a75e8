//! Supervisor operations on share links (decisions.md section 10): one per view, enabled by PUT
//! (an active link keeps its token; enabling a disabled link issues a new token, so a link once
//! disabled stays dead), disabled by DELETE, looked up by token for the public read-only page.
//!
//! Lookups by token go through the SHA-256 of the token (`Supervisor::share_tokens`), so the
//! secret is never compared byte by byte and the time taken tells nothing about it.

use rand::distributions::Alphanumeric;
use rand::Rng;
use subtle::ConstantTimeEq;

use super::error::{CatalogError, CatalogResult};
use super::model::{now_timestamp, Share};
use super::store::{CatalogChange, EntityKind};
use super::supervisor::Supervisor;
use crate::auth::{hash_secret, Principal};

/// Characters of a share token (random alphanumerics: about 143 bits).
const TOKEN_LEN: usize = 24;

fn new_token() -> String {
    rand::thread_rng().sample_iter(&Alphanumeric).take(TOKEN_LEN).map(char::from).collect()
}

fn not_found(view_id: &str) -> CatalogError {
    CatalogError::NoShareLink { view_id: view_id.to_owned() }
}

impl Supervisor {
    /// Enables the view's share link (creating it on first use); the caller checked the view.
    pub fn enable_share(
        &mut self,
        p: &Principal,
        view_id: &str,
        include_grid_history: Option<bool>,
    ) -> CatalogResult<Share> {
        let now = now_timestamp();
        let share = match self.shares.get(view_id) {
            Some(existing) => Share {
                active: true,
                include_grid_history: include_grid_history.unwrap_or(existing.include_grid_history),
                last_modified_date: now,
                token: if existing.active { existing.token.clone() } else { new_token() },
                ..existing.clone()
            },
            None => Share {
                view_id: view_id.to_owned(),
                company_id: p.company_id().to_owned(),
                token: new_token(),
                active: true,
                include_grid_history: include_grid_history.unwrap_or(false),
                created_date: now.clone(),
                last_modified_date: now,
            },
        };
        self.commit(&[CatalogChange::put(EntityKind::Share, view_id, &share)])?;
        if let Some(old) = self.shares.insert(view_id.to_owned(), share.clone()) {
            self.share_tokens.remove(&hash_secret(&old.token));
        }
        self.share_tokens.insert(hash_secret(&share.token), view_id.to_owned());
        Ok(share)
    }

    /// The view's share link (404 shareIsNotFound before the first PUT).
    pub fn share(&self, view_id: &str) -> CatalogResult<Share> {
        self.shares.get(view_id).cloned().ok_or_else(|| not_found(view_id))
    }

    /// Disables the view's share link: the page 404s until it is enabled again.
    pub fn disable_share(&mut self, view_id: &str) -> CatalogResult<()> {
        let mut share = self.share(view_id)?;
        share.active = false;
        share.last_modified_date = now_timestamp();
        self.commit(&[CatalogChange::put(EntityKind::Share, view_id, &share)])?;
        self.share_tokens.remove(&hash_secret(&share.token));
        self.shares.insert(view_id.to_owned(), share);
        Ok(())
    }

    /// The active share link with this token, found by the token's hash.
    pub fn share_by_token(&self, token: &str) -> Option<Share> {
        let view_id = self.share_tokens.get(&hash_secret(token))?;
        let share = self.shares.get(view_id)?;
        let same = bool::from(share.token.as_bytes().ct_eq(token.as_bytes()));
        (share.active && same).then(|| share.clone())
    }

    /// The hashes of the active links' tokens, for `share_tokens`.
    pub(super) fn index_share_tokens(&mut self) {
        self.share_tokens = self
            .shares
            .values()
            .filter(|s| s.active)
            .map(|s| (hash_secret(&s.token), s.view_id.clone()))
            .collect();
    }
}
