// Sent while the inbox's modules load: the three requests it starts with (who is signed in,
// the first page of pending requests, their count). inbox.js takes an answer only for exactly
// the request it would send itself, with the same token; otherwise it sends its own.
(() => {
  const KEY = "interlock.token";
  let token = "";
  try {
    token = sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
  } catch {
    return;  // storage refused (a privacy setting): inbox.js asks for everything itself
  }
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const sent = {};
  for (const path of ["api/me", "api/threads?limit=40&status=interrupted",
    "api/threads?limit=1&count=true&status=interrupted"]) {
    const response = fetch(new URL(path, document.baseURI).toString(),
      { headers, cache: "no-store" });
    response.catch(() => {});  // a failure is reported by whoever takes the answer
    sent[path] = { token, response };
  }
  window.interlockEarly = sent;
})();
