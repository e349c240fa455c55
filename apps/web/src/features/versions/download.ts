import { alertFailure } from '../../lib/api';
import { POPUP_BLOCKED } from './messages';
import { downloadUrl } from './queries';

/**
 * docs/product.md, Calls: the download URL opens in a new tab. The tab is opened at the click, while the
 * browser still counts it as the person's gesture, and pointed at the signed URL once it is known;
 * when the popup is blocked, the person may open it on the current page instead.
 */
export async function openDownload(appId: string, appVerId: string) {
  const tab = window.open('', '_blank');
  try {
    const { url } = await downloadUrl(appId, appVerId);
    if (tab && !tab.closed) {
      // The file's page needs nothing of this one.
      tab.opener = null;
      tab.location.href = url;
    } else if (window.confirm(POPUP_BLOCKED)) {
      window.location.assign(url);
    }
  } catch (error) {
    tab?.close();
    alertFailure(error);
  }
}
