/**
 * A session's report page, `{base_url}/1/reports/<session>?token=<token>`: the session number
 * names it, the random token (sessions.report_token) opens it, so holding one report's link
 * reveals nothing of the others'. Pure.
 */
export function reportUrl(baseUrl: string, session: number, token: string): string {
  return `${baseUrl}/1/reports/${session}?token=${encodeURIComponent(token)}`;
}
