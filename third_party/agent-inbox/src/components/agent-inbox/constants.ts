export const VIEW_STATE_THREAD_QUERY_PARAM = "view_state_thread_id";
export const AGENT_INBOXES_LOCAL_STORAGE_KEY = "inbox:agent_inboxes";
export const LANGCHAIN_API_KEY_LOCAL_STORAGE_KEY = "inbox:langchain_api_key";
export const OFFSET_PARAM = "offset";
export const LIMIT_PARAM = "limit";
export const INBOX_PARAM = "inbox";
export const AGENT_INBOX_PARAM = "agent_inbox";
export const NO_INBOXES_FOUND_PARAM = "no_inboxes_found";
export const AGENT_INBOX_GITHUB_README_URL =
  "https://github.com/langchain-ai/agent-inbox/blob/main/README.md";

export const IMPROPER_SCHEMA = "improper_schema";
export const STUDIO_NOT_WORKING_TROUBLESHOOTING_URL = `${AGENT_INBOX_GITHUB_README_URL}#the-open-in-studio-button-doesnt-work-for-my-deployed-graphs`;
