-- The registry model each setup runs, so every per-setup table (pm_*, navigator_*) joins the
-- market, the indices and Arena on model_id. A view, so it follows the registry as it is now:
-- a setup's API id is an OpenRouter id, and OpenRouter's listing of it names its model; a
-- setup whose API id no source lists (a local model) has no model_id.
CREATE VIEW setup_models AS
SELECT s.setup_id, s.label, s.api_id, a.model_id
FROM setups s
LEFT JOIN model_aliases a ON a.source = 'openrouter_models' AND a.source_key = s.api_id;
