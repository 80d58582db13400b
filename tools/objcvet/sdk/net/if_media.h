// net/if_media.h (xnu): struct ifmediareq and the bits Delta reads.
#pragma once
#include <net/if.h>
struct ifmediareq {
	char ifm_name[IFNAMSIZ];
	int ifm_current;
	int ifm_mask;
	int ifm_status;
	int ifm_active;
	int ifm_count;
	int *ifm_ulist;
};
#define IFM_NMASK 0x000000e0
#define IFM_ETHER 0x00000020
#define IFM_IEEE80211 0x00000080
#define IFM_AVALID 0x00000001
#define IFM_ACTIVE 0x00000002
