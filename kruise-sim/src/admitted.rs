//! The write pipeline with admission, as the real server orders it:
//! decode → mutating webhooks → create/update rules (defaults, validation) → validating
//! webhooks → storage. Webhooks are called outside the store's lock; the write then commits
//! only if the object is still the one the webhooks saw, else the request is retried from
//! a fresh read (as `GuaranteedUpdate` does), so stale bodies still answer 409.
//!
//! Without any webhook configuration, requests take the plain synchronous path, unless the
//! resource converts between its served and stored forms (see [`crate::conversion`]).
//!
//! Also admitted as kube-apiserver admits them:
//! - `deletecollection`: each item is admitted as a `DELETE` (`oldObject` the item, `name`
//!   empty and `namespace` the request's, as `AdmissionToValidateObjectDeleteFunc` passes the
//!   collection's attributes) just before it is deleted. Items go in list order and the first
//!   failure (a denial included) ends the request with that error: items before it are
//!   deleted, it and the ones after are kept, as with the real server's default single
//!   `--delete-collection-workers`.
//! - `pods/binding` and `pods/eviction`: a `CREATE` of the subresource, with the Binding or
//!   Eviction as the object. The eviction's own deletion of the pod is not admitted again
//!   (the real `EvictionREST` deletes with `ValidateAllObjectFunc`).
//! - Deletes by the garbage collector and the namespace controller: see [`crate::gc`].
//!
//! Admitted writes end by running the deletes they left to the collector (see
//! [`Cluster::run_deferred`]), so dependents are gone when an owner's deletion is answered.

use crate::admission::{ADMIN, Attributes, Operation};
use crate::cluster::{
    Cluster, DeleteOptions, ListOptions, PatchType, Sub, WriteOptions, present, to_storage,
};
use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::store::Write;
use crate::util::{meta_mut, meta_str};
use serde_json::{Value, json};

/// How often a write is retried when the object changed while webhooks were called.
const RETRIES: usize = 16;

fn sub_name(sub: Sub) -> &'static str {
    match sub {
        Sub::Main => "",
        Sub::Status => "status",
        Sub::Scale => "scale",
    }
}

fn options(kind: &str, opts: &WriteOptions) -> Value {
    let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if let Some(fm) = &opts.field_manager {
        o["fieldManager"] = json!(fm);
    }
    o
}

/// `DeleteOptions` as admission shows them.
pub(crate) fn delete_options(opts: &DeleteOptions) -> Value {
    let mut o = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if let Some(p) = &opts.propagation {
        o["propagationPolicy"] = json!(p);
    }
    if let Some(g) = opts.grace_period_seconds {
        o["gracePeriodSeconds"] = json!(g);
    }
    if let Some(uid) = &opts.uid {
        o["preconditions"]["uid"] = json!(uid);
    }
    if let Some(rv) = &opts.resource_version {
        o["preconditions"]["resourceVersion"] = json!(rv);
    }
    if opts.dry_run {
        o["dryRun"] = json!(["All"]);
    }
    o
}

fn rv(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion")
}

impl Cluster {
    /// Creates an object through admission.
    pub async fn create_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let converts = self.converts(def);
        if !self.has_webhooks() && !converts {
            return self.create(def, ns, body, opts);
        }
        self.check_namespace(def, ns)?;
        let (obj, mut warnings) = self.admit_new(def, ns, body, opts).await?;
        let obj = self.to_stored(def, obj).await?;
        let out = self.served(def, self.commit_create(def, obj, opts)?).await?;
        self.run_deferred().await;
        warnings.dedup();
        Ok((out, warnings))
    }

    /// Mutates, builds and validates a new object; answers it in storage form.
    async fn admit_new(
        &self,
        def: &ResourceDef,
        ns: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let view = self.creation_view(def, ns, body)?;
        let mut a = Attributes {
            def,
            sub: "",
            op: Operation::Create,
            namespace: ns,
            name: meta_str(&view, "name").unwrap_or_default().to_string(),
            dry_run: opts.dry_run,
            options: options("CreateOptions", opts),
            user: ADMIN,
        };
        let (mutated, mut warnings) = self.mutate(&a, Some(view), None).await?;
        let mutated = mutated.unwrap_or(Value::Null);
        let (built, w) = self.build_new(def, ns, mutated, opts)?;
        warnings.extend(w);
        a.name = meta_str(&built, "name").unwrap_or_default().to_string();
        warnings.extend(self.validate_admission(&a, Some(&present(def, &built)), None).await?);
        Ok((built, warnings))
    }

    /// Replaces an object (or a subresource) through admission.
    pub async fn update_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, bool, Vec<String>), ApiError> {
        if !self.has_webhooks() && !self.converts(def) {
            return self.update(def, ns, name, sub, body, opts);
        }
        let out = self.write_admitted(def, ns, name, sub, opts, false, |_| Ok(body.clone())).await;
        self.run_deferred().await;
        out
    }

    /// Patches an object (or a subresource) through admission.
    #[allow(clippy::too_many_arguments)]
    pub async fn patch_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        ptype: PatchType,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<(Value, bool, Vec<String>), ApiError> {
        if !self.has_webhooks() && !self.converts(def) {
            return self.patch(def, ns, name, sub, ptype, body, opts);
        }
        let patch = self.check_patch(def, sub, ptype, body, opts)?;
        let opts = &WriteOptions { patch: Some((ptype, patch.clone())), ..opts.clone() };
        let apply = ptype == PatchType::Apply;
        let out = self
            .write_admitted(def, ns, name, sub, opts, apply, |current| match current {
                Some(cur) => crate::cluster::apply_with(def, cur, &patch, ptype, opts),
                None => Ok(patch.clone()),
            })
            .await;
        self.run_deferred().await;
        out
    }

    /// The shared update loop: `make` builds the request's object (in the view webhooks see:
    /// the object, or its Scale) from the current one, or, with `None`, the object to create.
    #[allow(clippy::too_many_arguments)]
    async fn write_admitted<F>(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        sub: Sub,
        opts: &WriteOptions,
        create_missing: bool,
        make: F,
    ) -> Result<(Value, bool, Vec<String>), ApiError>
    where
        F: Fn(Option<&Value>) -> Result<Value, ApiError>,
    {
        let key = Self::obj_key(def, ns, name);
        for _ in 0..RETRIES {
            let Some(stored) = self.store.get(&def.key(), &key) else {
                if !(create_missing || def.create_on_update && sub == Sub::Main) {
                    return Err(ApiError::not_found(&def.group, &def.plural, name));
                }
                self.check_namespace(def, ns)?;
                let mut body = make(None)?;
                if let Some(m) = meta_mut(&mut body) {
                    m.insert("name".into(), json!(name));
                    m.remove("resourceVersion");
                }
                let (mut obj, warnings) = self.admit_new(def, ns, body.clone(), opts).await?;
                if create_missing {
                    let manager = opts.field_manager.as_deref().unwrap_or_default();
                    crate::managed::created_by_apply(def, &mut obj, &body, manager);
                }
                let obj = self.to_stored(def, obj).await?;
                match self.commit_create(def, obj, opts) {
                    Ok(out) => return Ok((self.served(def, out).await?, true, warnings)),
                    Err(e) if e.code == 409 && e.reason == "AlreadyExists" => continue,
                    Err(e) => return Err(e),
                }
            };
            // The stored object in the request's version (a webhook conversion, or the same
            // JSON), labelled with the storage apiVersion as the update rules expect.
            let mut old = self.served(def, (*stored).clone()).await?;
            to_storage(def, &mut old);
            let old_view =
                if sub == Sub::Scale { self.scale_of(def, &old)? } else { present(def, &old) };
            let view = make(Some(&old_view))?;
            let a = Attributes {
                def,
                sub: sub_name(sub),
                op: Operation::Update,
                namespace: ns,
                name: name.to_string(),
                dry_run: opts.dry_run,
                options: options("UpdateOptions", opts),
                user: ADMIN,
            };
            let (mutated, mut warnings) = self.mutate(&a, Some(view), Some(&old_view)).await?;
            let mutated = mutated.unwrap_or(Value::Null);
            let new =
                if sub == Sub::Scale { self.apply_scale(def, &old, &mutated)? } else { mutated };
            let decision = self.update_rules(def, &old, new.clone(), sub, opts, &mut warnings)?;
            let decision = self.own(def, &old, decision, sub, opts, create_missing);
            let result = match &decision {
                Write::Put(r) => r.clone(),
                Write::Keep => old.clone(),
                _ => new,
            };
            let result_view = if sub == Sub::Scale {
                self.scale_of(def, &result)?
            } else {
                present(def, &result)
            };
            warnings
                .extend(self.validate_admission(&a, Some(&result_view), Some(&old_view)).await?);
            let decision = match decision {
                Write::Put(r) => Write::Put(self.to_stored(def, r).await?),
                d => d,
            };
            let mut raced = false;
            let written = self.store.write(&def.key(), &key, opts.dry_run, |cur| match cur {
                Some(c) if rv(c) == rv(&stored) => Ok(decision),
                _ => {
                    raced = true;
                    Err(ApiError::stale(&def.group, &def.plural, name))
                }
            });
            let written = match written {
                Err(_) if raced => continue,
                w => w?,
            };
            self.after_write(def, &written.event, &written.object);
            let out = self.served(def, (*written.object).clone()).await?;
            let out = if sub == Sub::Scale { self.scale_of(def, &out)? } else { out };
            return Ok((out, false, warnings));
        }
        Err(ApiError::stale(&def.group, &def.plural, name))
    }

    /// Deletes an object through admission (`DELETE` with the old object).
    pub async fn delete_admitted(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        if self.has_webhooks() {
            let old = self.get_served(def, ns, name).await?;
            self.admit_delete(def, ns, name, opts, &old).await?;
        }
        let out = self.delete(def, ns, name, opts)?;
        self.run_deferred().await;
        self.served(def, out).await
    }

    /// Runs the mutating (which cannot change anything) then the validating webhooks for
    /// the deletion of `old` (in `def`'s version), as `AdmissionToValidateObjectDeleteFunc`.
    /// `name` is the request's: empty for the items of a deletecollection.
    async fn admit_delete(
        &self,
        def: &ResourceDef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
        old: &Value,
    ) -> Result<(), ApiError> {
        let a = Attributes {
            def,
            sub: "",
            op: Operation::Delete,
            namespace: ns,
            name: name.to_string(),
            dry_run: opts.dry_run,
            options: delete_options(opts),
            user: ADMIN,
        };
        self.mutate(&a, None, Some(old)).await?;
        self.validate_admission(&a, None, Some(old)).await?;
        Ok(())
    }

    /// Deletes every matching object of a resource, admitting each deletion (see the module
    /// documentation for what happens on a denial).
    pub async fn delete_collection_admitted(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<Value>, ApiError> {
        if !self.has_webhooks() {
            let out = self.delete_collection(def, ns, list, opts);
            self.run_deferred().await;
            return out;
        }
        let page =
            self.list(def, ns, &ListOptions { limit: 0, continue_token: None, ..list.clone() })?;
        let mut out = Vec::new();
        let mut result = Ok(());
        for item in page.items {
            let n = meta_str(&item, "name").unwrap_or_default().to_string();
            let item_ns = meta_str(&item, "namespace").unwrap_or_default().to_string();
            let deleted = async {
                let old = self.served(def, (*item).clone()).await?;
                self.admit_delete(def, ns.unwrap_or_default(), "", opts, &old).await?;
                self.delete(def, &item_ns, &n, opts)
            };
            match deleted.await {
                Ok(v) => out.push(v),
                Err(e) if e.code == 404 => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.run_deferred().await;
        result.map(|()| out)
    }

    /// Runs admission for a `CREATE` of a pod subresource with an object of its own
    /// (`binding`, `eviction`); answers the object after the mutating webhooks. `check`
    /// runs between mutation and validation (the REST handler's own checks).
    async fn admit_pod_subresource(
        &self,
        sub: &str,
        ns: &str,
        name: &str,
        mut body: Value,
        opts: &WriteOptions,
        check: impl Fn(&Value) -> Result<(), ApiError>,
    ) -> Result<Value, ApiError> {
        let Some(pods) = self.resolve("", "v1", "pods") else { return Err(ApiError::no_route()) };
        // As `EnsureObjectNamespaceMatchesRequestNamespace`: an empty namespace is the
        // request's.
        if let Some(m) = meta_mut(&mut body)
            && m.get("namespace").and_then(Value::as_str).is_none_or(str::is_empty)
        {
            m.insert("namespace".into(), json!(ns));
        }
        if !self.has_webhooks() {
            check(&body)?;
            return Ok(body);
        }
        let a = Attributes {
            def: &pods,
            sub,
            op: Operation::Create,
            namespace: ns,
            name: name.to_string(),
            dry_run: opts.dry_run,
            options: options("CreateOptions", opts),
            user: ADMIN,
        };
        let (mutated, _) = self.mutate(&a, Some(body), None).await?;
        let mutated = mutated.unwrap_or(Value::Null);
        check(&mutated)?;
        self.validate_admission(&a, Some(&mutated), None).await?;
        Ok(mutated)
    }

    /// Binds a pod to a node (`pods/binding`) through admission.
    pub async fn bind_admitted(
        &self,
        ns: &str,
        name: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let check = |b: &Value| {
            body_name_matches(b, name, "Binding")?;
            crate::cluster::check_binding(name, b)
        };
        let body = self.admit_pod_subresource("binding", ns, name, body, opts, check).await?;
        self.bind(ns, name, &body, opts.dry_run)
    }

    /// Evicts a pod (`pods/eviction`) through admission.
    pub async fn evict_admitted(
        &self,
        ns: &str,
        name: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let check = |b: &Value| {
            body_name_matches(b, name, "Eviction")?;
            Ok(())
        };
        let body = self.admit_pod_subresource("eviction", ns, name, body, opts, check).await?;
        // The pod is deleted with the Eviction's own deleteOptions (preconditions, grace
        // period, dry run), as EvictionREST does; a dry-run request stays one.
        let mut delete = crate::http::delete_options_of(
            body.get("deleteOptions").unwrap_or(&Value::Null),
            &std::collections::HashMap::new(),
        );
        delete.dry_run |= opts.dry_run;
        let out = self.evict(ns, name, &delete);
        self.run_deferred().await;
        out
    }
}

/// A subresource body (`Binding`, `Eviction`) may omit its name, but must not name another
/// object than the URL does.
fn body_name_matches(body: &Value, name: &str, kind: &str) -> Result<(), ApiError> {
    if meta_str(body, "name").is_some_and(|n| !n.is_empty() && n != name) {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in {kind} object"
        )));
    }
    Ok(())
}
