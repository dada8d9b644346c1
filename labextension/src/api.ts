/**
 * Calls the server extension (zeroshot_kernel/lab_server) under `{baseUrl}zeroshot/api/`.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export class ApiError extends Error {
  readonly status: number;
  /** From an unknown study's reply: the names that exist. */
  readonly studies?: string[];
  /** The zeroshot server extension itself answered (a JSON `{error}`), not the Jupyter server. */
  readonly fromExtension: boolean;

  constructor(message: string, status: number, studies?: string[], fromExtension = false) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.studies = studies;
    this.fromExtension = fromExtension;
  }

  /** A 404 that no zeroshot handler gave: the server extension is not installed or not enabled. */
  get missingExtension(): boolean {
    return this.status === 404 && !this.fromExtension;
  }
}

export function apiUrl(path: string, query: Record<string, string | undefined> = {}): string {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'zeroshot', 'api', path);
  const q: Record<string, string> = {};
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== '') q[k] = v;
  }
  return Object.keys(q).length ? url + URLExt.objectToQueryString(q) : url;
}

/** A path segment, encoded (study names and run ids are data). */
export function seg(s: string): string {
  return encodeURIComponent(s);
}

export async function requestAPI<T>(
  path: string,
  init: RequestInit = {},
  query: Record<string, string | undefined> = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = apiUrl(path, query);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`The Jupyter server did not answer: ${String((error as Error)?.message ?? error)}`, 0);
  }
  const text = await response.text();
  let data: unknown = null;
  if (text.length > 0) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const body = (data ?? {}) as { error?: unknown; message?: unknown; studies?: unknown };
    const studies = Array.isArray(body.studies) ? body.studies.map(String) : undefined;
    let message: string;
    if (typeof body.error === 'string' && body.error) message = body.error;
    else if (typeof body.message === 'string' && body.message) message = body.message;
    else if (response.status === 404)
      message = 'Not found: the zeroshot server extension is not running in this Jupyter server (pip install zeroshot-workbench, then restart Jupyter).';
    else message = `${response.status} ${response.statusText}`;
    throw new ApiError(message, response.status, studies, typeof body.error === 'string');
  }
  if (data === null && text.length > 0) {
    throw new ApiError('The server answered something other than JSON.', response.status);
  }
  return data as T;
}

/** POST with an empty JSON body (the server takes the XSRF token from the cookie). */
export function postAPI<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
  return requestAPI<T>(path, { method: 'POST', body: '{}' }, query);
}
